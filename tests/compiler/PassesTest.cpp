// The lowering passes that are not a strategy's, each seen in the IR it leaves (--emit=ir): what
// it changes where it applies, and that it leaves alone what it must not touch.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "compiler/sync/Strategy.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

/// The lowered IR of a stdlib spec for `options`.
std::string loweredIr(const std::string& spec, CompileOptions options) {
  auto source = loadSpec(spec);
  EXPECT_TRUE(bool(source));
  std::string ir, diagnostics;
  DiagnosticText irOut(ir), diagOut(diagnostics);
  options.printIr = &irOut;
  auto compiled = compileCollective(*source, options, diagOut);
  EXPECT_TRUE(bool(compiled)) << diagOut.str();
  if (!compiled)
    consumeError(compiled.takeError());
  return irOut.str();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ForwardRegisters, TheReducedChunkIsSentFromTheRegisterItWasComputedIn) {
  CompileOptions options;
  options.nranks = 4;
  const std::string ir = loweredIr("allreduce_twoshot", options);
  EXPECT_TRUE(has(ir, "keep reduced_0 <- op(")) << ir;
  EXPECT_TRUE(has(ir, "<- register reduced_0 = out[")) << ir;
}

TEST(ForwardRegisters, LeavesAReduceWhoseResultIsNotSentAlone) {
  CompileOptions options;
  options.nranks = 4;
  const std::string ir = loweredIr("allreduce_oneshot", options);
  EXPECT_FALSE(has(ir, "keep reduced_")) << ir;
}

TEST(HoistLoads, APeerLoopOfPutsLoadsTheInputOnce) {
  CompileOptions options;
  options.nranks = 8;
  const std::string ir = loweredIr("allreduce_oneshot", options);
  const size_t let = ir.find("let hoisted_0 = load in[");
  const size_t loop = ir.find("for p = ");
  ASSERT_NE(let, std::string::npos) << ir;
  EXPECT_LT(let, loop) << "the load comes before the peer loop:\n" << ir;
  EXPECT_TRUE(has(ir, "<- register hoisted_0 = in[")) << ir;
}

TEST(HoistLoads, APeerLoopThatRunsOnceIsLeftAsItIs) {
  CompileOptions options;
  options.nranks = 2;
  const std::string ir = loweredIr("allreduce_oneshot", options);
  EXPECT_FALSE(has(ir, "hoisted_")) << ir;
}

TEST(HoistLoads, APutWhoseSourceDependsOnThePeerStaysInTheLoop) {
  CompileOptions options;
  options.nranks = 8;
  // The scatter sends in.chunk(p): a different chunk to every peer.
  const std::string ir = loweredIr("allreduce_twoshot", options);
  EXPECT_TRUE(has(ir, "<- load in[slot 0, +chunk_begin(n, p)")) << ir;
}

TEST(CacheRows, ARowOfFewVectorsPerThreadStaysInRegisters) {
  CompileOptions options;
  options.dtype = DType::BF16;
  options.rowLength = 4096;
  options.threads = 512;
  const std::string ir = loweredIr("allreduce_rmsnorm", options);
  EXPECT_TRUE(has(ir, "keeps its 1 vector(s) of the row in registers")) << ir;
  EXPECT_TRUE(has(ir, "keep row_cache")) << ir;
  EXPECT_TRUE(has(ir, "rows of register row_cache")) << ir;
}

TEST(CacheRows, ARowTooLongForRegistersIsReadBackFromMemory) {
  CompileOptions options;
  options.dtype = DType::BF16;
  options.rowLength = 65536; // 16 vectors per thread at 512 threads
  options.threads = 512;
  const std::string ir = loweredIr("allreduce_rmsnorm", options);
  EXPECT_FALSE(has(ir, "row_cache")) << ir;
}

TEST(PartitionSteps, StatementsOfDifferentBoundsGetLoopsOfTheirOwn) {
  CompileOptions options;
  options.nranks = 4;
  const std::string ir = loweredIr("allgather_direct", options);
  // The push: puts of n elements and the copy into out.block(rank), both of bound n, share one
  // loop; nothing else is in the step.
  const size_t push = ir.find("step 0 push");
  const size_t gather = ir.find("step 1 gather");
  const std::string pushText = ir.substr(push, gather - push);
  size_t loops = 0;
  for (size_t at = pushText.find("element loop"); at != std::string::npos;
       at = pushText.find("element loop", at + 1))
    ++loops;
  EXPECT_EQ(loops, 1u) << pushText;
  EXPECT_TRUE(has(pushText, "put store_flagged_packets")) << pushText;
  EXPECT_TRUE(has(pushText, "copy store out[")) << pushText;
  // The gather's copies read chunks of n elements that peers wrote: their own loop.
  EXPECT_TRUE(has(ir.substr(gather), "element loop i < n")) << ir;
}

TEST(SyncStrategies, EachNamesTheDeviceHelpersItsOperationsPrintAs) {
  // A kernel pastes the helper files of the operations it has; each must be one its strategy
  // declares (or rows.cuh, which row loops bring whatever the strategy).
  for (SyncKind sync :
       {SyncKind::Barrier, SyncKind::LL, SyncKind::Sentinel, SyncKind::LL128Atomic}) {
    const auto declared = syncStrategy(sync).deviceHelpers();
    for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"}) {
      CompileOptions options;
      options.sync = sync;
      auto source = loadSpec(spec);
      std::string diagnostics;
      DiagnosticText out(diagnostics);
      auto compiled = compileCollective(*source, options, out);
      ASSERT_TRUE(bool(compiled)) << out.str();
      for (const char* file :
           {"barrier.cuh", "ll.cuh", "sentinel.cuh", "atomic_lines.cuh", "ll128.cuh"}) {
        const bool pasted = has(compiled->cudaSource, std::string("// compiler/device/") + file);
        const bool allowed =
            std::find(declared.begin(), declared.end(), std::string_view(file)) != declared.end();
        EXPECT_TRUE(!pasted || allowed) << name(sync) << " " << spec << " pastes " << file;
      }
    }
  }
}

} // namespace
} // namespace collc
