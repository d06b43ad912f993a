// BufferSharing (tools/harness/): which buffers the run harness may pass as one memory, decided
// from the compiled variant alone, with the refusals the runtime would make at launch said first.
#include "tools/harness/BufferSharing.h"

#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

/// An AllReduce with `auxPairs` pairs of aux buffers (written 2k, read 2k + 1) that may alias.
CompiledCollective allReduceWithPairs(int auxPairs, bool inPlace, bool together) {
  CompiledCollective compiled;
  compiled.specName = "c";
  compiled.sync = SyncKind::LL;
  compiled.nranks = 4;
  compiled.dtype = DType::BF16;
  compiled.inPlace = inPlace;
  compiled.aliasesTogether = together;
  for (int k = 0; k < auxPairs; ++k) {
    AuxBuffer written{"w" + std::to_string(k), {1, 0, false, 4}, true, std::nullopt};
    AuxBuffer read{"r" + std::to_string(k), {1, 0, false, 4}, false, std::nullopt};
    compiled.aux.push_back(written);
    compiled.aux.push_back(read);
    compiled.auxAliases.push_back({2 * k, 2 * k + 1});
  }
  return compiled;
}

std::string refusal(const CompiledCollective& compiled, BufferSharing sharing) {
  Error err = checkBufferSharing(compiled, sharing, 4096);
  return err ? toString(std::move(err)) : "";
}

TEST(BufferSharing, DistinctBuffersAreAlwaysAllowed) {
  EXPECT_EQ(refusal(allReduceWithPairs(0, false, false), {}), "");
  EXPECT_EQ(describe({}), "distinct buffers");
  EXPECT_EQ(describe({true, true}), "in place and aux aliased");
}

TEST(BufferSharing, InPlaceOnlyWhereTheVariantAllowsIt) {
  EXPECT_EQ(refusal(allReduceWithPairs(0, true, false), {true, false}), "");
  const std::string message = refusal(allReduceWithPairs(0, false, false), {true, false});
  EXPECT_EQ(message.find("in place (out is in's memory) is not allowed for 'c' compiled for sync "
                         "ll (4 ranks, bf16 sum): the verifier did not prove the ll variant's "
                         "lowered program for it"),
            0u)
      << message;
  EXPECT_NE(message.find("'collc check c'"), std::string::npos) << message;
}

TEST(BufferSharing, InPlaceNeedsOneSizeInAndOut) {
  CompiledCollective gather = allReduceWithPairs(0, true, false);
  gather.kind = CollectiveKind::AllGather; // out holds every rank's n: never exactly in's memory
  const std::string message = refusal(gather, {true, false});
  EXPECT_NE(message.find("takes 4096 elements in and 16384 out"), std::string::npos) << message;
}

TEST(BufferSharing, AuxAliasedNeedsAPair) {
  EXPECT_NE(refusal(allReduceWithPairs(0, true, true), {false, true}).find("has no aux buffers"),
            std::string::npos);
  CompiledCollective none = allReduceWithPairs(1, false, false);
  none.auxAliases.clear();
  EXPECT_NE(refusal(none, {false, true}).find("allows no pair of its aux buffers"),
            std::string::npos);
  EXPECT_EQ(refusal(allReduceWithPairs(1, false, false), {false, true}), "");
}

// The runtime's rule (BufferOverlap.h): several pairs at once only where all were proved together,
// and then only all of them.
TEST(BufferSharing, SeveralPairsOnlyAllTogetherWhereProvedTogether) {
  EXPECT_NE(refusal(allReduceWithPairs(1, true, false), {true, true}).find("not several at once"),
            std::string::npos);
  EXPECT_EQ(refusal(allReduceWithPairs(1, true, true), {true, true}), "");
  // One aux pair alone beside an allowed in place: one pair, fine.
  EXPECT_EQ(refusal(allReduceWithPairs(1, true, true), {false, true}), "");
  // Two aux pairs proved together with in place: without in place they are not the whole set.
  const std::string message = refusal(allReduceWithPairs(2, true, true), {false, true});
  EXPECT_NE(message.find("only as all 3 together: ask for in place too"), std::string::npos)
      << message;
  EXPECT_EQ(refusal(allReduceWithPairs(2, true, true), {true, true}), "");
  EXPECT_EQ(refusal(allReduceWithPairs(2, false, true), {false, true}), "");
}

TEST(BufferSharing, ABufferInTwoPairsIsRefused) {
  CompiledCollective compiled = allReduceWithPairs(1, false, true);
  compiled.aux.push_back({"r1", {1, 0, false, 4}, false, std::nullopt});
  compiled.auxAliases.push_back({0, 2}); // w0 with r0 and with r1: r0 and r1 would be one too
  const std::string message = refusal(compiled, {false, true});
  EXPECT_NE(message.find("aux buffer 'w0'"), std::string::npos) << message;
  EXPECT_NE(message.find("in two pairs"), std::string::npos) << message;
}

TEST(BufferSharing, WrittenAuxBuffersUseTheirReadPartnersMemory) {
  const CompiledCollective compiled = allReduceWithPairs(2, false, true);
  EXPECT_EQ(auxMemoryOwners(compiled, {}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(auxMemoryOwners(compiled, {false, true}), (std::vector<int>{1, 1, 3, 3}));
}

CompiledCollective compileStdlib(const std::string& name, SyncKind sync, int nranks) {
  auto spec = loadSpec(name);
  EXPECT_TRUE(bool(spec));
  if (!spec) {
    consumeError(spec.takeError());
    return {};
  }
  CompileOptions options;
  options.sync = sync;
  options.nranks = nranks;
  options.formatSource = false;
  std::string diagnostics;
  DiagnosticText sink(diagnostics);
  auto compiled = compileCollective(*spec, options, sink);
  EXPECT_TRUE(bool(compiled)) << diagnostics;
  if (!compiled) {
    consumeError(compiled.takeError());
    return {};
  }
  return std::move(*compiled);
}

// The stdlib's fused RMSNorm: in place only under barrier (ll and sentinel rows are stored into
// `in` while other blocks may still send them); residual_out as residual under all three.
TEST(BufferSharing, FusedRmsNormVerdictsPerStrategy) {
  const CompiledCollective barrier = compileStdlib("allreduce_rmsnorm", SyncKind::Barrier, 3);
  EXPECT_EQ(refusal(barrier, {true, false}), "");
  EXPECT_EQ(refusal(barrier, {false, true}), "");
  EXPECT_EQ(refusal(barrier, {true, true}), "");
  for (SyncKind sync : {SyncKind::LL, SyncKind::Sentinel}) {
    const CompiledCollective arrival = compileStdlib("allreduce_rmsnorm", sync, 3);
    EXPECT_NE(refusal(arrival, {true, false})
                  .find("the verifier did not prove the " + std::string(name(sync)) +
                        " variant's lowered program"),
              std::string::npos)
        << name(sync);
    EXPECT_EQ(refusal(arrival, {false, true}), "") << name(sync);
    EXPECT_NE(refusal(arrival, {true, true}), "") << name(sync);
  }
}

} // namespace
} // namespace collc
