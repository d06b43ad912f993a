// A measurement, not a test of collc: whether the races the verifier refuses in place can be seen
// on this GPU. Variants whose lowered program the verifier did NOT prove for an in-place call (the
// stdlib's fused RMSNorm under ll and sentinel, where a block stores normalized rows into `in`
// while another block of its rank may still be sending them; a one-shot whose reduce writes the
// output chunk by chunk, under the same strategies) are run in place anyway, at 2 to 8 co-resident
// ranks on GPU 0, through a copy of their CompiledCollective with `inPlace` forced on. Nothing in
// collc does that: the runtime refuses such a launch, and the copy exists only here, to get past
// it. The fused RMSNorm runs in f32: there a row's elements are pushed by two blocks, one of them
// not the block that normalizes the row. (In bf16 with rows of 4096 elements, each element is
// pushed by the very thread that later normalizes it, so nothing can show; the verifier refuses
// the variant for every row length and type all the same.) The one-shot runs in bf16.
// Every call is checked; the probe prints how many calls and elements came out wrong. Zero
// proves nothing (a race that did not happen in these calls), and a count above zero is the race
// the verifier refused, observed; the verifier's refusal stands either way.
//
// What the probe asserts is only its control: the same variants out of place, over as many calls,
// are right. It is disabled in the suite (a measurement, and it takes a minute);
// `scripts/gpu-check BUNDLE inplace` runs it with --gtest_also_run_disabled_tests and keeps its
// "[ race probe ]" lines.
#include "compiler/Compile.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <cstdio>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <ostream>

namespace collc {
namespace {

/// A one-shot AllReduce whose reduce writes the output one chunk at a time: in place, a thread can
/// overwrite an element of `in` that another thread of its rank has not pushed yet, unless a
/// barrier orders the push before the reduce (tests/compiler/ProofRoundTwoTest.cpp).
constexpr const char* kChunkedOneShot = R"(collective chunked_oneshot kind allreduce
  buffers in: T[n], out: T[n]
  scratch slot[nranks]: T[n]
  sync barrier
{
  step push {
    for p in peers { put in -> p.slot[rank] }
  }
  step reduce {
    wait push
    for k in ranks { out.chunk(k) = reduce(in.chunk(k), slot[peers].chunk(k)) }
  }
}
)";

constexpr int kEagerCalls = 16; // eager calls in place per count
constexpr int kGraphCalls = 32; // back-to-back calls in place, each on buffers of its own

struct ProbeCase {
  std::string spec; // a stdlib name, or "chunked_oneshot" (kChunkedOneShot)
  SyncKind sync;
  int nranks;

  DType dtype() const { return spec == "allreduce_rmsnorm" ? DType::F32 : DType::BF16; }
};

std::string caseName(const ProbeCase& c) {
  return c.spec + "_" + std::string(name(c.sync)) + "_" + std::string(name(c.dtype())) + "_r" +
         std::to_string(c.nranks);
}

void PrintTo(const ProbeCase& c, std::ostream* os) {
  *os << caseName(c);
}

std::vector<ProbeCase> probeCases() {
  std::vector<ProbeCase> cases;
  for (const char* spec : {"allreduce_rmsnorm", "chunked_oneshot"})
    for (SyncKind sync : {SyncKind::LL, SyncKind::Sentinel})
      for (int nranks = 2; nranks <= 8; ++nranks)
        cases.push_back({spec, sync, nranks});
  return cases;
}

/// Whole rows for the fused RMSNorm (8 and 64 tokens of its default hidden size); a small and a
/// long odd count for the one-shot.
std::vector<uint64_t> probeCounts(const CompiledCollective& compiled) {
  if (compiled.rowLength > 0)
    return {8 * uint64_t(compiled.rowLength), 64 * uint64_t(compiled.rowLength)};
  return {16381, 262149};
}

/// What one run of in-place calls got wrong, over every rank.
struct Tally {
  int calls = 0;
  uint64_t rankCalls = 0, wrongRankCalls = 0, elements = 0, wrongElements = 0;
  int wrongCalls = 0; // reports (of one call each) with something wrong on some rank

  void add(const RunReport& report, int nranks) {
    calls += report.checkedCalls;
    rankCalls += uint64_t(report.checkedCalls) * uint64_t(nranks);
    wrongRankCalls += report.wrongRankCalls;
    elements += report.checkedElements;
    wrongElements += report.wrongElements;
    wrongCalls += report.correct ? 0 : 1;
  }
};

class InPlaceRaceProbe : public gputest::SharedGpuTest<ProbeCase> {};

TEST_P(InPlaceRaceProbe, DISABLED_CountsWrongResultsOfRefusedInPlaceCalls) {
  const ProbeCase& c = GetParam();
  auto spec = c.spec == "chunked_oneshot"
                  ? Expected<SpecSource>(SpecSource{"chunked_oneshot.coll", kChunkedOneShot})
                  : loadSpec(c.spec);
  ASSERT_TRUE(bool(spec)) << toString(spec.takeError());
  CompileOptions options;
  options.dtype = c.dtype();
  options.nranks = c.nranks;
  options.sync = c.sync;
  options.formatSource = false;
  std::shared_ptr<const ir::Program> reference; // the spec's program: the harness's reference
  options.specProgram = &reference;
  auto compiled = compileCollective(*spec, options, std::cerr);
  ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
  const int most = maxCoResidentBlocksPerRank(multiprocessorCount(0), c.nranks);
  if (compiled->launch.blocks > most) {
    options.blocks = most;
    compiled = compileCollective(*spec, options, std::cerr);
    ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
  }
  // The premise: the verifier refused this variant in place. (If it stops refusing, the probe
  // has nothing to measure here and says so by failing.)
  ASSERT_FALSE(compiled->inPlace) << caseName(c) << " is allowed in place now";
  JitOptions jit;
  jit.arch = gpuArch(0);
  Expected<JitResult> cubin =
      compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());

  const std::vector<uint64_t> counts = probeCounts(*compiled);
  const uint64_t seed = uint64_t(c.nranks) * 7919 + uint64_t(c.sync);
  // The control: the variant as compiled, out of place, as many calls as the probe makes.
  {
    Expected<std::unique_ptr<CollectiveInstance>> instance =
        CollectiveInstance::create(*world_, *compiled, cubin->image, counts.back());
    ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
    for (uint64_t count : counts) {
      RunOptions run;
      run.reference = reference;
      run.count = count;
      run.time = false;
      run.checks = kEagerCalls;
      run.seed = seed + count;
      Expected<RunReport> eager = runAndCheck(*world_, **instance, *compiled, run);
      ASSERT_TRUE(bool(eager)) << toString(eager.takeError());
      EXPECT_TRUE(eager->correct) << "control, out of place: " << eager->firstMismatches;
    }
    Expected<RunReport> graph = runGraphStress(*world_, **instance, *compiled, counts.back(),
                                               kGraphCalls, seed, reference.get());
    ASSERT_TRUE(bool(graph)) << toString(graph.takeError());
    EXPECT_TRUE(graph->correct) << "control, out of place: " << graph->firstMismatches;
  }

  // PROBE ONLY: in place forced on a copy, past the runtime's refusal. Not a thing collc does.
  CompiledCollective forced = *compiled;
  forced.inPlace = true;
  forced.aliasesTogether = false;
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(*world_, forced, cubin->image, counts.back());
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  BufferSharing inPlace;
  inPlace.inPlace = true;
  for (uint64_t count : counts) {
    Tally eager;
    RunOptions run;
    run.reference = reference;
    run.count = count;
    run.time = false;
    run.checks = 1;
    run.sharing = inPlace;
    // One call per report, so that every wrong call is counted.
    for (int call = 0; call < kEagerCalls; ++call) {
      run.seed = seed + count * 131 + uint64_t(call);
      Expected<RunReport> report = runAndCheck(*world_, **instance, forced, run);
      ASSERT_TRUE(bool(report)) << toString(report.takeError());
      eager.add(*report, c.nranks);
    }
    std::printf("[ race probe ] %s n=%llu, in place NOT PROVED (forced for this probe), "
                "eager: %d of %d calls wrong; %llu of %llu rank-calls; %llu of %llu elements\n",
                caseName(c).c_str(), static_cast<unsigned long long>(count), eager.wrongCalls,
                eager.calls, static_cast<unsigned long long>(eager.wrongRankCalls),
                static_cast<unsigned long long>(eager.rankCalls),
                static_cast<unsigned long long>(eager.wrongElements),
                static_cast<unsigned long long>(eager.elements));
    RecordProperty("eager_wrong_rank_calls_n" + std::to_string(count),
                   std::to_string(eager.wrongRankCalls));
  }
  Expected<RunReport> graph =
      runGraphStress(*world_, **instance, forced, counts.back(), kGraphCalls, seed + 1,
                     reference.get(), false, inPlace);
  ASSERT_TRUE(bool(graph)) << toString(graph.takeError());
  std::printf("[ race probe ] %s n=%llu, in place NOT PROVED (forced for this probe), "
              "graph of %d calls: %llu of %llu rank-calls wrong; %llu of %llu elements\n",
              caseName(c).c_str(), static_cast<unsigned long long>(counts.back()), kGraphCalls,
              static_cast<unsigned long long>(graph->wrongRankCalls),
              static_cast<unsigned long long>(uint64_t(graph->checkedCalls) * uint64_t(c.nranks)),
              static_cast<unsigned long long>(graph->wrongElements),
              static_cast<unsigned long long>(graph->checkedElements));
  RecordProperty("graph_wrong_rank_calls", std::to_string(graph->wrongRankCalls));
  if (!graph->correct)
    std::printf("[ race probe ] %s first mismatches:\n%s", caseName(c).c_str(),
                graph->firstMismatches.c_str());
}

INSTANTIATE_TEST_SUITE_P(Refused, InPlaceRaceProbe, ::testing::ValuesIn(probeCases()),
                         [](const ::testing::TestParamInfo<ProbeCase>& info) {
                           return caseName(info.param);
                         });

} // namespace
} // namespace collc
