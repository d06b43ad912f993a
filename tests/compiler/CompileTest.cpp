#include "compiler/Compile.h"

#include "compiler/DevicePrelude.h"
#include "compiler/DiagnosticText.h"

#include <gtest/gtest.h>
#include <llvm/ADT/StringRef.h>

namespace collc {
namespace {

CompiledCollective compileOk(const std::string& name, const CompileOptions& options = {}) {
  auto spec = loadSpec(name);
  EXPECT_TRUE(bool(spec));
  if (!spec) {
    consumeError(spec.takeError());
    return {};
  }
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  EXPECT_TRUE(bool(compiled)) << out.str();
  if (!compiled) {
    consumeError(compiled.takeError());
    return {};
  }
  return *compiled;
}

std::string compileError(const std::string& specText, const CompileOptions& options) {
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(SpecSource{"spec.coll", specText}, options, out);
  EXPECT_FALSE(bool(compiled));
  if (compiled)
    return "";
  Error error = compiled.takeError();
  EXPECT_TRUE(error.isSpecError()) << error.message();
  return out.str();
}

/// True if the spec text compiles; its diagnostics are printed by the failing expectation.
bool compilesText(const std::string& specText, const CompileOptions& options) {
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(SpecSource{"spec.coll", specText}, options, out);
  EXPECT_TRUE(bool(compiled)) << out.str();
  if (!compiled) {
    consumeError(compiled.takeError());
    return false;
  }
  return true;
}

TEST(Compile, StdlibHasBothAllReduces) {
  auto names = stdlibNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "allreduce_oneshot"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "allreduce_twoshot"), names.end());
}

TEST(Compile, UnknownSpecNameIsAClearError) {
  auto spec = loadSpec("allreduce_nowhere");
  ASSERT_FALSE(bool(spec));
  std::string message = toString(spec.takeError());
  EXPECT_NE(message.find("the standard library has no spec of that name"), std::string::npos);
}

TEST(Compile, OneShotScratchAndLaunch) {
  CompileOptions options;
  options.nranks = 4;
  options.dtype = DType::BF16;
  auto compiled = compileOk("allreduce_oneshot", options);
  EXPECT_EQ(compiled.kernelName, "collc_allreduce_oneshot");
  EXPECT_EQ(compiled.nranks, 4);
  EXPECT_EQ(compiled.syncPointsPerCall, 1);
  ASSERT_EQ(compiled.scratch.size(), 1u);
  EXPECT_EQ(compiled.scratch[0].slots, 4);
  EXPECT_EQ(compiled.scratch[0].bytes(1000), 4u * 1000u * 2u);
  EXPECT_EQ(compiled.stepNames, (std::vector<std::string>{"push", "reduce"}));
  EXPECT_EQ(compiled.launch.blocks, 8); // the spec's launch default
  EXPECT_NE(compiled.cudaSource.find("constexpr int kRanks = 4;"), std::string::npos);
  EXPECT_NE(compiled.cudaSource.find("typedef bf16 T;"), std::string::npos);
}

TEST(Compile, TwoShotScratchIsAboutOneChunkPerRankPlusTheResult) {
  CompileOptions options;
  options.nranks = 8;
  auto compiled = compileOk("allreduce_twoshot", options);
  EXPECT_EQ(compiled.syncPointsPerCall, 2);
  ASSERT_EQ(compiled.scratch.size(), 2u);
  // inbox: 8 slots of chunk_size(1000) = ceil(1000 / 8) = 125, rounded up to 128 elements.
  EXPECT_EQ(compiled.scratch[0].bytes(1000), 8u * 128u * 4u);
  EXPECT_EQ(compiled.scratch[1].bytes(1000), 1000u * 4u);
}

TEST(Compile, LaunchOverridesApplyAndAreChecked) {
  CompileOptions options;
  options.blocks = 2;
  options.threads = 128;
  options.vectorBytes = 8;
  auto compiled = compileOk("allreduce_oneshot", options);
  EXPECT_EQ(compiled.launch.blocks, 2);
  EXPECT_EQ(compiled.launch.threads, 128);
  EXPECT_NE(compiled.cudaSource.find("constexpr int kVec = 2;"), std::string::npos);

  auto spec = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(spec));
  options.threads = 100;
  EXPECT_NE(compileError(spec->text, options).find("threads = 100 is invalid"), std::string::npos);
}

// unroll N: each thread takes N vectors a stride apart per iteration of an element loop (earlier
// builds accepted and ignored it). Unroll 1 keeps the plain loop.
TEST(Compile, UnrollTakesSeveralVectorsPerIteration) {
  CompileOptions options;
  options.unroll = 4;
  auto unrolled = compileOk("allreduce_twoshot", options);
  EXPECT_EQ(unrolled.launch.unroll, 4);
  EXPECT_NE(unrolled.cudaSource.find("i_first += 4 * stride"), std::string::npos);
  EXPECT_NE(unrolled.cudaSource.find("const u64 i = i_first + i_unrolled * stride;"),
            std::string::npos);
  options.unroll = 1;
  auto plain = compileOk("allreduce_twoshot", options);
  EXPECT_EQ(plain.cudaSource.find("i_unrolled"), std::string::npos);
  EXPECT_NE(plain.cudaSource.find("for (u64 i = first; i < chunk_size(count); i += stride)"),
            std::string::npos);
}

// whole_stores: a constant of the kernel (so part of its source and cache key), from the spec's
// launch line or the options, 0 or 1.
TEST(Compile, WholeStoresIsAConstantOfTheKernel) {
  CompileOptions options;
  auto plain = compileOk("allreduce_oneshot", options);
  EXPECT_EQ(plain.launch.wholeStores, 0);
  EXPECT_NE(plain.cudaSource.find("constexpr bool kWholeStores = false;"), std::string::npos);
  options.wholeStores = 1;
  auto whole = compileOk("allreduce_oneshot", options);
  EXPECT_EQ(whole.launch.wholeStores, 1);
  EXPECT_NE(whole.cudaSource.find("constexpr bool kWholeStores = true;"), std::string::npos);

  auto spec = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(spec));
  options.wholeStores = 2;
  EXPECT_NE(compileError(spec->text, options).find("whole_stores = 2 is invalid: must be 0 or 1"),
            std::string::npos);
  std::string text = spec->text;
  const size_t launch = text.find("launch ");
  ASSERT_NE(launch, std::string::npos);
  text.insert(launch + 7, "whole_stores=1 ");
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto fromSpec = compileCollective(SpecSource{"spec.coll", text}, CompileOptions{}, out);
  ASSERT_TRUE(bool(fromSpec)) << out.str();
  EXPECT_EQ(fromSpec->launch.wholeStores, 1);
  text.replace(text.find("whole_stores=1"), 14, "whole_stores=3");
  EXPECT_NE(compileError(text, CompileOptions{}).find("must be 0 or 1"), std::string::npos);
}

TEST(Compile, UnrollIsRefusedWhereLoopsGoByRowsOrLines) {
  CompileOptions options;
  options.unroll = 2;
  auto rows = loadSpec("allreduce_rmsnorm");
  ASSERT_TRUE(bool(rows));
  EXPECT_NE(compileError(rows->text, options)
                .find("unroll = 2 does not apply to this variant: "
                      "its loops go by rows"),
            std::string::npos);
  auto lines = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(lines));
  options.sync = SyncKind::LL128;
  options.experimentalLL128 = true;
  EXPECT_NE(compileError(lines->text, options).find("walk 128-byte lines (ll128)"),
            std::string::npos);
}

TEST(Compile, RankCountOutsideTheSpecsRangeIsRefused) {
  auto spec = loadSpec("allreduce_twoshot"); // ranks 2..72
  ASSERT_TRUE(bool(spec));
  CompileOptions options;
  options.nranks = 73;
  EXPECT_NE(compileError(spec->text, options).find("cannot compile for 73 ranks"),
            std::string::npos);
}

TEST(Compile, LL128IsDisabledUnlessAskedForExperimentally) {
  auto spec = loadSpec("allreduce_oneshot");
  ASSERT_TRUE(bool(spec));
  CompileOptions options;
  options.sync = SyncKind::LL128;
  EXPECT_NE(compileError(spec->text, options).find("sync strategy 'll128' is disabled"),
            std::string::npos);
  options.experimentalLL128 = true;
  EXPECT_TRUE(compilesText(spec->text, options));
}

TEST(Compile, LL128SendsLinesOf120DataBytesWalkedByEightThreads) {
  CompileOptions options;
  options.sync = SyncKind::LL128;
  options.experimentalLL128 = true;
  options.dtype = DType::BF16;
  options.vectorBytes = 4; // a line is moved 16 bytes per thread whatever is asked
  auto oneShot = compileOk("allreduce_oneshot", options);
  EXPECT_EQ(oneShot.syncPointsPerCall, 0);
  EXPECT_EQ(oneShot.scratchCopies, 2);
  ASSERT_EQ(oneShot.scratch.size(), 1u);
  // slot: 2 slots of 1000 bf16 = 2000 bytes each, in ceil(2000 / 120) = 17 lines of 128 bytes.
  EXPECT_EQ(oneShot.scratch[0].bytes(1000), 2u * 17u * 128u);
  EXPECT_EQ(oneShot.cudaSource.find("barrier<"), std::string::npos);
  EXPECT_NE(oneShot.cudaSource.find("constexpr int kVec = 8;"), std::string::npos);
  EXPECT_NE(oneShot.cudaSource.find("ll128_store("), std::string::npos);
  EXPECT_NE(oneShot.cudaSource.find("ll128_load("), std::string::npos);
  EXPECT_NE(oneShot.cudaSource.find("line * kLL128LineElems <"), std::string::npos);

  // Two-shot's result buffer is used only in chunks: each chunk starts a line of its own.
  options.nranks = 4;
  options.dtype = DType::F32;
  auto twoShot = compileOk("allreduce_twoshot", options);
  ASSERT_EQ(twoShot.scratch.size(), 2u);
  // inbox: 4 slots of chunk_size(1000) = 256 f32 = 1024 bytes, 9 lines each.
  EXPECT_EQ(twoShot.scratch[0].bytes(1000), 4u * 9u * 128u);
  // result: 4 chunks of 256 f32, 9 lines each.
  EXPECT_EQ(twoShot.scratch[1].bytes(1000), 4u * 9u * 128u);
  EXPECT_NE(twoShot.cudaSource.find("result_chunk_lines = ll128_lines(chunk_size(count))"),
            std::string::npos);
}

TEST(Compile, LL128IsRefusedWhereLinesCannotLineUp) {
  CompileOptions options;
  options.sync = SyncKind::LL128;
  options.experimentalLL128 = true;
  // Written in chunks, read as whole slots: the lines cannot start at both.
  const char* mixed =
      "collective c kind allreduce buffers in: T[n], out: T[n] scratch s[nranks]: T[n]\n"
      "{ step push { for p in peers { for c in ranks { put in.chunk(c) -> p.s[rank].chunk(c) } } "
      "}\n"
      "  step reduce { wait push  out = reduce(in, s[peers]) } }";
  EXPECT_NE(compileError(mixed, options).find("is used both as whole slots and in chunks"),
            std::string::npos);
  // What LL refuses, LL128 refuses too: here, a step reads what other threads wrote.
  const char* crossThread = "collective c kind allreduce buffers in: T[n], out: T[n]\n"
                            "  scratch slot[nranks]: T[n]  scratch mine: T[n]\n"
                            "{ step push { for p in peers { put in -> p.slot[rank] }\n"
                            "              for c in ranks { mine.chunk(c) = in.chunk(c) } }\n"
                            "  step reduce { wait push  out = reduce(mine, slot[peers]) } }";
  EXPECT_NE(compileError(crossThread, options).find("another thread of the same rank"),
            std::string::npos);
}

TEST(Compile, LL128AtomicShrinksTheScratchToOneAccumulationBuffer) {
  CompileOptions options;
  options.sync = SyncKind::LL128Atomic;
  options.nranks = 4;
  options.dtype = DType::BF16;
  auto compiled = compileOk("allreduce_twoshot", options);
  // inbox: 4 slots of chunk_size(4096) = 1024 bf16 become one accumulation buffer of 1024, plus
  // one line head per 8 elements; result stays n elements, as LL packets (twice the bytes).
  ASSERT_EQ(compiled.scratch.size(), 3u);
  EXPECT_EQ(compiled.scratch[0].bytes(4096), 1024u * 2u);
  EXPECT_EQ(compiled.scratch[1].bytes(4096), 4096u * 2u * 2u);
  EXPECT_EQ(compiled.scratch[2].name, "inbox.line_heads");
  EXPECT_EQ(compiled.scratch[2].bytes(4096), 128u * 2u);
  EXPECT_NE(compiled.cudaSource.find("red.relaxed.sys.global.add.noftz.v4.bf16x2"),
            std::string::npos);
  EXPECT_EQ(compiled.syncPointsPerCall, 0);
}

TEST(Compile, LL128AtomicIsRefusedWhereItCannotApply) {
  CompileOptions options;
  options.sync = SyncKind::LL128Atomic;
  options.op = ReduceOp::Max;
  auto spec = loadSpec("allreduce_twoshot");
  ASSERT_TRUE(bool(spec));
  EXPECT_NE(compileError(spec->text, options).find("which computes a sum"), std::string::npos);
  options.op = ReduceOp::Sum;
  // A reduce over every slot, with no separate operand for this rank's own part: not the
  // pattern the strategy rewrites.
  const char* noOwnOperand =
      "collective c kind allreduce buffers in: T[n], out: T[n] scratch s[nranks]: T[n]\n"
      "{ step push { for p in ranks { put in -> p.s[rank] } }\n"
      "  step reduce { wait push  out = reduce(s[ranks]) } }";
  EXPECT_NE(compileError(noOwnOperand, options).find("needs a reduce-scatter"), std::string::npos);
}

TEST(Compile, DataArrivalStrategiesReplaceTheBarrier) {
  for (SyncKind sync : {SyncKind::LL, SyncKind::Sentinel}) {
    CompileOptions options;
    options.sync = sync;
    options.dtype = DType::F16;
    auto compiled = compileOk("allreduce_twoshot", options);
    EXPECT_EQ(compiled.sync, sync);
    EXPECT_EQ(compiled.syncPointsPerCall, 0);
    EXPECT_EQ(compiled.cudaSource.find("barrier<"), std::string::npos) << name(sync);
    ASSERT_EQ(compiled.scratch.size(), 2u);
    if (sync == SyncKind::LL) {
      EXPECT_EQ(compiled.scratchCopies, 2);
      // 8 bytes of data per 16-byte packet: inbox holds 2 slots of chunk_size(1000) = 504 f16.
      EXPECT_EQ(compiled.scratch[0].bytes(1000), 2u * (504u * 2u / 8u) * 16u);
      EXPECT_EQ(compiled.scratch[0].fillWidth, 0);
    } else {
      EXPECT_EQ(compiled.scratchCopies, 3);
      EXPECT_EQ(compiled.scratch[0].bytes(1000), 2u * 504u * 2u);
      EXPECT_EQ(compiled.scratch[0].fillWidth, 2);
      EXPECT_EQ(compiled.scratch[0].fillBits, 0x8000u); // -0.0 in f16
    }
  }
}

/// The generated kernel itself, without the prelude's helpers before it.
std::string kernelBody(const std::string& source) {
  const size_t at = source.find("__global__ void __launch_bounds__");
  EXPECT_NE(at, std::string::npos);
  return at == std::string::npos ? source : source.substr(at);
}

/// Position of `needle` in `source`, failing the test where it is missing.
size_t positionOf(const std::string& source, const std::string& needle) {
  const size_t at = source.find(needle);
  EXPECT_NE(at, std::string::npos) << "missing: " << needle;
  return at;
}

TEST(Compile, ProgrammaticLaunchIsOnByDefaultAndCanBeTurnedOff) {
  // The head's griddepcontrol instructions are compiled only with call_head<true>; the PTX of
  // each (StdlibNvrtcTest) has them, or not.
  auto compiled = compileOk("allreduce_oneshot");
  EXPECT_TRUE(compiled.programmaticLaunch);
  positionOf(kernelBody(compiled.cudaSource), "call_head<true>(params, epoch);");
  CompileOptions options;
  options.programmaticLaunch = false;
  compiled = compileOk("allreduce_oneshot", options);
  EXPECT_FALSE(compiled.programmaticLaunch);
  positionOf(kernelBody(compiled.cudaSource), "call_head<false>(params, epoch);");
}

TEST(Compile, TheEpochIsStoredAndFencedBeforeTheNextKernelMayStart) {
  // The next call reads the epoch before its griddepcontrol.wait: this call's store and its
  // fence must come before the only launch_dependents, which thread 0 alone executes.
  const std::string head = deviceFile("kernel_head.cuh");
  const size_t barrier = positionOf(head, "__syncthreads();");
  const size_t store = positionOf(head, "store_epoch(params.epochs + blockIdx.x, epoch);");
  const size_t fence = positionOf(head, "fence.acq_rel.gpu;");
  const size_t wait = positionOf(head, "griddepcontrol.wait;");
  const size_t trigger = positionOf(head, "griddepcontrol.launch_dependents;");
  EXPECT_LT(barrier, store);
  EXPECT_LT(store, fence);
  EXPECT_LT(fence, wait);
  EXPECT_LT(wait, trigger);
  EXPECT_TRUE(llvm::StringRef(head.substr(0, trigger))
                  .rtrim()
                  .drop_back(std::string("asm volatile(\"").size())
                  .rtrim()
                  .endswith("if (threadIdx.x == 0)"))
      << "only thread 0 lets the next kernel start";
  const std::string triggerAsm = "asm volatile(\"griddepcontrol.launch_dependents;\")";
  EXPECT_EQ(head.find(triggerAsm), head.rfind(triggerAsm));
  // One warp needs no block barrier between the read and the store; without programmatic launch
  // no later kernel overlaps this one, and there is nothing to fence for.
  EXPECT_LT(positionOf(head, "if (kThreads > 32)"), barrier);
  EXPECT_LT(barrier, positionOf(head, "__syncwarp();"));
  EXPECT_LT(positionOf(head, "if (kProgrammaticLaunch)"), fence);

  // Every kernel reads the epoch, then runs the head once, before its first step; the head alone
  // stores the epoch.
  CompileOptions options;
  options.threads = 128;
  const std::string source = compileOk("allreduce_oneshot", options).cudaSource;
  positionOf(source, "// compiler/device/kernel_head.cuh");
  const std::string body = kernelBody(source);
  const size_t read = positionOf(body, "const u64 epoch = load_epoch(params.epochs + blockIdx.x)");
  const size_t call = positionOf(body, "call_head<true>(params, epoch);");
  EXPECT_LT(read, call);
  EXPECT_LT(call, positionOf(body, "// Step '"));
  EXPECT_EQ(body.find("call_head<"), body.rfind("call_head<"));
  EXPECT_EQ(body.find("store_epoch("), std::string::npos) << "the epoch is stored by the head";
}

TEST(Compile, LLWidensVectorsToWholePackets) {
  CompileOptions options;
  options.sync = SyncKind::LL;
  options.vectorBytes = 4;
  auto compiled = compileOk("allreduce_oneshot", options);
  EXPECT_NE(compiled.cudaSource.find("constexpr int kVec = 2;"), std::string::npos);
}

const char* const kAtomicSpec =
    "collective c kind allreduce buffers in: T[n], out: T[n] scratch acc: T[n]\n"
    "  sync ll\n"
    "{ step init { acc = in }\n"
    "  step add { wait init  for p in peers { atomic_add in -> p.acc } }\n"
    "  step finish { wait add  out = acc } }";

TEST(Compile, DataArrivalRefusesAtomicsAtTheSyncClause) {
  std::string diagnostics = compileError(kAtomicSpec, CompileOptions{});
  EXPECT_NE(diagnostics.find("spec.coll:2:8: error: sync strategy 'll' cannot synchronize 'c': "
                             "atomic_add gives a reader no per-element sign"),
            std::string::npos)
      << diagnostics;
}

TEST(Compile, DataArrivalRefusesLocalCrossThreadDependencies) {
  const char* spec = "collective c kind allreduce buffers in: T[n], out: T[n]\n"
                     "  scratch slot[nranks]: T[n]  scratch mine: T[n]\n"
                     "{ step push { for p in peers { put in -> p.slot[rank] }\n"
                     "              for c in ranks { mine.chunk(c) = in.chunk(c) } }\n"
                     "  step reduce { wait push  out = reduce(mine, slot[peers]) } }";
  CompileOptions options;
  options.sync = SyncKind::Sentinel;
  std::string diagnostics = compileError(spec, options);
  EXPECT_NE(diagnostics.find("another thread of the same rank"), std::string::npos) << diagnostics;
  options.sync = SyncKind::Barrier; // the same spec is fine with a barrier
  EXPECT_TRUE(compilesText(spec, options));
}

TEST(Compile, SentinelRefusesDataReadTwice) {
  const char* spec = "collective c kind allreduce buffers in: T[n], out: T[n]\n"
                     "  scratch slot[nranks]: T[n]\n"
                     "{ step push { for p in peers { put in -> p.slot[rank] } }\n"
                     "  step reduce { wait push  out = reduce(in, slot[peers]) }\n"
                     "  step again { out = reduce(in, slot[peers]) } }";
  CompileOptions options;
  options.sync = SyncKind::Sentinel;
  EXPECT_NE(compileError(spec, options).find("read more than once (or never)"), std::string::npos);
  options.sync = SyncKind::LL; // LL packets can be read any number of times
  EXPECT_TRUE(compilesText(spec, options));
}

TEST(Compile, AtomicAddRequiresSum) {
  const char* spec = "collective c kind allreduce buffers in: T[n], out: T[n] scratch acc: T[n]\n"
                     "{ step init { acc = in }\n"
                     "  step add { wait init  for p in peers { atomic_add in -> p.acc } }\n"
                     "  step finish { wait add  out = acc } }";
  CompileOptions options;
  options.op = ReduceOp::Max;
  std::string diagnostics = compileError(spec, options);
  EXPECT_NE(diagnostics.find("spec.coll:3:42: error: atomic_add accumulates with '+'"),
            std::string::npos)
      << diagnostics;
}

TEST(Compile, PrintsTheIRAfterEveryPass) {
  std::string ir;
  DiagnosticText out(ir);
  CompileOptions options;
  options.printIr = &out;
  options.printIrAfterAll = true;
  compileOk("allreduce_twoshot", options);
  for (const char* pass : {"sema", "partition", "barrier sync lowering", "vectorize"})
    EXPECT_NE(out.str().find(std::string("// ----- IR after ") + pass), std::string::npos) << pass;
  EXPECT_NE(out.str().find("barrier 0 matched"), std::string::npos);
}

/// The labels of --print-ir-after-all's dumps, in order.
std::vector<std::string> dumpLabels(const std::string& dumps) {
  std::vector<std::string> labels;
  const std::string head = "// ----- IR after ";
  for (size_t at = dumps.find(head); at != std::string::npos; at = dumps.find(head, at + 1))
    labels.push_back(dumps.substr(at + head.size(), dumps.find('\n', at) - at - head.size()));
  return labels;
}

// compiler/Lower.cpp is the variant's one list: the first dump is the spec as written (a repeated
// step still one step), then each step of the list, the checks of the lowered program included.
TEST(Compile, PrintsEveryStepOfTheLoweringInOrder) {
  std::string ir;
  DiagnosticText out(ir);
  CompileOptions options;
  options.nranks = 3;
  options.printIr = &out;
  options.printIrAfterAll = true;
  compileOk("allgather_ring", options);
  const std::vector<std::string> expected = {"sema (steps as written)",
                                             "step expansion (nranks=3)",
                                             "partition",
                                             "barrier sync lowering",
                                             "vectorize",
                                             "forward registers",
                                             "hoist loads",
                                             "cache rows",
                                             "row length check: unchanged",
                                             "lowered program proof: unchanged",
                                             "proof across calls: unchanged",
                                             "size limits check: unchanged",
                                             "alias proofs: unchanged",
                                             "unroll rule: unchanged"};
  EXPECT_EQ(dumpLabels(ir), expected) << ir;
  // Before expansion the ring's step is one; after it, one per value of s in 0..nranks - 1.
  const size_t expansion = ir.find("// ----- IR after step expansion");
  ASSERT_NE(expansion, std::string::npos);
  EXPECT_EQ(ir.substr(0, expansion).find("pass[s=0]"), std::string::npos) << ir;
  EXPECT_NE(ir.substr(0, expansion).find("step 0 pass for s in 0.."), std::string::npos) << ir;
  const std::string expanded =
      ir.substr(expansion, ir.find("// ----- IR after partition") - expansion);
  for (const char* step : {"pass[s=0]", "pass[s=1]"})
    EXPECT_NE(expanded.find(step), std::string::npos) << step << "\n" << expanded;
  EXPECT_EQ(expanded.find("pass[s=2]"), std::string::npos) << expanded;
}

// A variant the unroll rule refuses: every step before it was dumped, and the error names it.
TEST(Compile, TheUnrollRuleIsAStepOfTheList) {
  std::string ir;
  DiagnosticText out(ir);
  CompileOptions options;
  options.printIr = &out;
  options.printIrAfterAll = true;
  options.sync = SyncKind::Barrier;
  options.unroll = 2;
  std::string diagnostics;
  DiagnosticText diagnosticOut(diagnostics);
  auto spec = loadSpec("allreduce_rmsnorm");
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  auto compiled = compileCollective(*spec, options, diagnosticOut);
  ASSERT_FALSE(bool(compiled));
  EXPECT_TRUE(compiled.takeError().isSpecError());
  EXPECT_NE(diagnostics.find("unroll = 2 does not apply to this variant"), std::string::npos)
      << diagnostics;
  const std::vector<std::string> labels = dumpLabels(ir);
  ASSERT_FALSE(labels.empty());
  EXPECT_EQ(labels.back(), "alias proofs: unchanged") << ir;
}

} // namespace
} // namespace collc
