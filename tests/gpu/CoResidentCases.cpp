#include "tests/gpu/CoResidentCases.h"

#include "compiler/Compile.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "runtime/SharedGpuWorld.h"
#include "tests/ManyRankCounts.h"
#include "tests/SpecForRanks.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <atomic>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>
#include <thread>

namespace collc::gputest {
namespace {

/// The parameter names of the parameterized tests this process runs (its filter and shard):
/// ctest runs one per process, and that one should compile one kernel.
std::set<std::string> namesToRun() {
  std::set<std::string> names;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(j);
      const std::string test = info.name();
      if (info.should_run() && test.find('/') != std::string::npos)
        names.insert(test.substr(test.rfind('/') + 1));
    }
  }
  return names;
}

} // namespace

std::string caseName(const CoResidentCase& c) {
  return "r" + std::to_string(c.nranks) + "_" + c.spec + "_" + std::string(name(c.sync)) + "_" +
         std::string(name(c.dtype)) + "_" + std::string(name(c.op)) + "_root" +
         std::to_string(c.root) + (c.rowLength ? "_h" + std::to_string(c.rowLength) : "");
}

void PrintTo(const CoResidentCase& c, std::ostream* os) {
  *os << caseName(c);
}

bool hasRows(const std::string& spec) {
  return spec == "allreduce_rmsnorm" || spec == "allreduce_rmsnorm_fp8" ||
         spec == "allreduce_rmsnorm_fp8_per_token" || spec == "allreduce_rmsnorm_nvfp4" ||
         spec == "allreduce_rmsnorm_nvfp4_linear";
}

CoResidentVariant compileCoResident(const CoResidentCase& c, int multiprocessors) {
  CoResidentVariant variant;
  auto spec = loadSpec(c.spec);
  if (!spec) {
    variant.error = toString(spec.takeError());
    return variant;
  }
  if (!tests::declaresRanks(spec->text, c.nranks)) {
    spec->text = tests::specTextForRanks(spec->text, c.nranks);
    if (spec->text.empty()) {
      variant.error = c.spec + " has no ranks line to declare " + std::to_string(c.nranks);
      return variant;
    }
  }
  CompileOptions options;
  // The world sharedGpuWorld makes for this rank count runs every rank in one launch past 32.
  options.rankLaunchEntry = sharedGpuLaunchFor(c.nranks) == SharedGpuLaunch::OneLaunch;
  options.dtype = c.dtype;
  options.op = c.op;
  options.nranks = c.nranks;
  options.root = c.root;
  options.sync = c.sync;
  options.rowLength = c.rowLength;
  options.formatSource = false; // a third of the compile, and nobody reads these sources
  options.specProgram = &variant.spec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::ostringstream diagnostics; // its own: variants compile on several threads at once
    auto compiled = compileCollective(*spec, options, diagnostics);
    if (!compiled) {
      variant.error = "compile: " + toString(compiled.takeError()) + "\n" + diagnostics.str();
      return variant;
    }
    variant.compiled = std::move(*compiled);
    const int most = maxCoResidentBlocksPerRank(multiprocessors, c.nranks);
    if (variant.compiled.launch.blocks <= most || most < 1)
      break;
    options.blocks = most;
  }
  return variant;
}

const CoResidentVariant& CoResidentVariants::of(const CoResidentCase& c) {
  if (compiledRankCounts_.insert(c.nranks).second) {
    const int multiprocessors = multiprocessorCount(0);
    JitOptions jit;
    if (std::string arch = gpuArch(0); !arch.empty())
      jit.arch = arch;
    const std::set<std::string> running = namesToRun();
    std::vector<std::pair<CoResidentCase, CoResidentVariant*>> pending;
    for (const CoResidentCase& each : cases_()) {
      const std::string name = caseName(each);
      if (each.nranks != c.nranks || (name != caseName(c) && !running.count(name)))
        continue;
      pending.emplace_back(each, &variants_[name]);
    }
    // The proof at 64 or 72 ranks takes seconds a variant: the specs compile on the threads too.
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < pending.size();) {
        CoResidentVariant& variant = *pending[i].second;
        variant = compileCoResident(pending[i].first, multiprocessors);
        if (!variant.error.empty())
          continue;
        Expected<JitResult> cubin = compileCuda(variant.compiled.cudaSource,
                                                variant.compiled.kernelName, JitOutput::Cubin, jit);
        if (cubin)
          variant.cubin = std::move(cubin->image);
        else
          variant.error = "NVRTC: " + toString(cubin.takeError());
      }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t)
      workers.emplace_back(work);
    work();
    for (std::thread& worker : workers)
      worker.join();
  }
  return variants_.at(caseName(c));
}

std::vector<uint64_t> coResidentCounts(int nranks, const CompiledCollective& compiled) {
  if (compiled.rowLength <= 0)
    return tests::manyRankCounts(nranks);
  std::vector<uint64_t> counts;
  for (uint64_t tokens : tests::manyRankTokens(nranks))
    counts.push_back(tokens * uint64_t(compiled.rowLength));
  return counts;
}

void checkCountsThenGraph(SharedGpuWorld& world, const CoResidentVariant& variant, int nranks,
                          uint64_t caseSeed, bool specialValues, int graphCalls) {
  const CompiledCollective& compiled = variant.compiled;
  const std::vector<uint64_t> counts = coResidentCounts(nranks, compiled);
  const uint64_t maxCount = *std::max_element(counts.begin(), counts.end());
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, compiled, variant.cubin, maxCount);
  ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
  for (uint64_t count : counts) {
    SCOPED_TRACE("count " + std::to_string(count));
    RunOptions options;
    options.reference = variant.spec;
    options.count = count;
    options.time = false;
    options.specialValues = specialValues;
    options.seed = caseSeed + count;
    Expected<RunReport> report = runAndCheck(world, **instance, compiled, options);
    ASSERT_TRUE(bool(report)) << toString(report.takeError());
    EXPECT_TRUE(report->correct) << report->firstMismatches;
    EXPECT_EQ(report->checkedCalls, options.checks);
  }
  SCOPED_TRACE("graph of " + std::to_string(graphCalls) + " calls of " +
               std::to_string(counts.back()));
  Expected<RunReport> report =
      runGraphStress(world, **instance, compiled, counts.back(), graphCalls, caseSeed,
                     variant.spec.get(), specialValues);
  ASSERT_TRUE(bool(report)) << toString(report.takeError());
  EXPECT_TRUE(report->correct) << report->firstMismatches;
  EXPECT_EQ(report->checkedCalls, graphCalls);
}

} // namespace collc::gputest
