// Differential testing on one GPU: random valid specs (tests/differential/SpecGenerator.h: seeds
// 0..39, and the first later seed of each template or choice those miss) and the accepted specs
// of tests/specs, each compiled with every strategy it accepts, run as 2 to 8 co-resident ranks on
// GPU 0 (SharedGpuWorld) and checked against their float64 reference, the spec interpreted
// (tools/harness/InterpretedReference.h). Counts leave the last
// chunk empty, hold one element in it, and make it long and partial (tests/ManyRankCounts.h). The
// element type goes round the strategies, and so does the operator for a generated spec that
// reduces and holds for every operator. Where a variant allows it, its calls also run in place and
// with its aux buffers as one memory, at the two longer counts. The closing line of each case says
// how many variants and calls it ran.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/CoResidency.h"
#include "runtime/CollectiveInstance.h"
#include "runtime/Devices.h"
#include "runtime/Jit.h"
#include "tests/ManyRankCounts.h"
#include "tests/StdlibStrategies.h"
#include "tests/differential/SpecGenerator.h"
#include "tests/gpu/GpuTestMain.h"
#include "tools/harness/RunHarness.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <regex>
#include <sstream>

namespace collc {
namespace {

/// Generated specs run on the GPU (seeds 0 .. kGeneratedSpecs - 1).
constexpr uint64_t kGeneratedSpecs = 40;
struct DifferentialCase {
  int nranks;
  std::string name;
  SpecSource source;
  bool everyOperator = false; // reduces, and holds for max and min too: the operator goes round
};

void PrintTo(const DifferentialCase& c, std::ostream* os) {
  *os << c.name << " at " << c.nranks << " ranks";
}

/// The rank counts a spec declares (`ranks A..B`, else 2..8) that the test runs: its fewest, 3, 5
/// and its most. Read off the text: the cases are listed in every gpu_tests process, so they must
/// cost nothing to list.
std::vector<int> rankCountsOf(const SpecSource& source) {
  int fewest = 2, most = 8;
  std::smatch match;
  if (std::regex_search(source.text, match, std::regex(R"(\branks\s+(\d+)\s*\.\.\s*(\d+))"))) {
    fewest = std::stoi(match[1]);
    most = std::stoi(match[2]);
  }
  std::vector<int> counts = {fewest};
  for (int r : {3, 5, most})
    if (r > counts.back() && r <= most && r <= 8)
      counts.push_back(r);
  return counts;
}

/// tests/specs: COLLC_TEST_SPECS_DIR where the tests run away from the source tree (the GPU
/// machine), else the source tree's.
std::filesystem::path acceptedSpecsDir() {
  const char* dir = std::getenv("COLLC_TEST_SPECS_DIR");
  return dir && *dir ? dir : COLLC_ACCEPTED_SPECS_DIR;
}

/// A generated spec of a reducing kind, without rows (whose epilogue's reference sums), that holds
/// for every operator.
bool everyOperator(const differential::GeneratedSpec& spec) {
  const std::string kind = spec.shape.substr(0, spec.shape.find(' '));
  return spec.sumOnlyAt.empty() && spec.text.find("\n  rows ") == std::string::npos &&
         (kind == "allreduce" || kind == "reducescatter" || kind == "reduce");
}

std::vector<DifferentialCase> differentialCases() {
  struct Spec {
    std::string name;
    SpecSource source;
    bool everyOperator;
  };
  std::vector<Spec> specs;
  for (uint64_t seed :
       differential::seedsCovering(kGeneratedSpecs, differential::featuredShapes())) {
    const differential::GeneratedSpec spec = differential::generateSpec(seed);
    specs.push_back({"generated_" + std::to_string(seed),
                     SpecSource{"generated-" + std::to_string(seed) + ".coll", spec.text},
                     everyOperator(spec)});
  }
  std::error_code missing;
  for (const auto& entry : std::filesystem::directory_iterator(acceptedSpecsDir(), missing)) {
    if (entry.path().extension() != ".coll")
      continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    specs.push_back({"specs_" + entry.path().stem().string(),
                     SpecSource{entry.path().filename().string(), text.str()}, false});
  }
  // Rank count outermost: the shared world is rebuilt only when the rank count changes.
  std::vector<DifferentialCase> cases;
  for (int nranks = 2; nranks <= 8; ++nranks)
    for (const Spec& spec : specs) {
      const std::vector<int> counts = rankCountsOf(spec.source);
      if (std::find(counts.begin(), counts.end(), nranks) != counts.end())
        cases.push_back({nranks, spec.name, spec.source, spec.everyOperator});
    }
  return cases;
}

/// The ways `compiled` allows a call to pass buffers as one memory (its own lowered program's
/// proof): in place, the aux pairs, and both where they were proved together.
std::vector<BufferSharing> sharingsOf(const CompiledCollective& compiled) {
  std::vector<BufferSharing> sharings;
  const bool aux = !compiled.auxAliases.empty();
  if (compiled.inPlace)
    sharings.push_back({true, false});
  if (aux)
    sharings.push_back({false, true});
  if (compiled.inPlace && aux && compiled.aliasesTogether)
    sharings.push_back({true, true});
  return sharings;
}

class DifferentialOneGpu : public gputest::SharedGpuTest<DifferentialCase> {};

TEST_P(DifferentialOneGpu, EveryStrategyMatchesTheReference) {
  const DifferentialCase& c = GetParam();
  const int multiprocessors = multiprocessorCount(0);
  JitOptions jit;
  jit.arch = gpuArch(0);
  int variants = 0, calls = 0, sharedCalls = 0;
  size_t d = 0, o = 0;
  for (SyncKind sync : tests::kGpuStrategies) {
    const DType dtype = kAllDTypes[d++ % std::size(kAllDTypes)];
    const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
    const ReduceOp op = c.everyOperator ? ops[o++ % std::size(ops)] : ReduceOp::Sum;
    CompileOptions options;
    options.nranks = c.nranks;
    options.sync = sync;
    options.dtype = dtype;
    options.op = tests::strategyApplies(sync, op) ? op : ReduceOp::Sum;
    options.formatSource = false;
    options.blocks = std::min(4, maxCoResidentBlocksPerRank(multiprocessors, c.nranks));
    std::string refused;
    DiagnosticText refusedSink(refused);
    auto programs = lowerVariantPrograms(c.source, options, refusedSink);
    if (!programs) { // a strategy this spec cannot use (or no default row length: none here)
      consumeError(programs.takeError());
      continue;
    }
    auto compiled = compileCollective(c.source, options, std::cerr);
    ASSERT_TRUE(bool(compiled)) << toString(compiled.takeError());
    SCOPED_TRACE(std::string("sync ") + std::string(name(sync)) + " " + std::string(name(dtype)) +
                 " op " + std::string(name(options.op)));
    Expected<JitResult> cubin =
        compileCuda(compiled->cudaSource, compiled->kernelName, JitOutput::Cubin, jit);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
    std::vector<uint64_t> counts = tests::manyRankCounts(c.nranks);
    if (compiled->rowLength > 0)
      for (uint64_t& count : counts)
        count = (count % 3 + 1) * uint64_t(compiled->rowLength);
    const uint64_t maxCount = *std::max_element(counts.begin(), counts.end());
    auto instance = CollectiveInstance::create(*world_, *compiled, cubin->image, maxCount);
    ASSERT_TRUE(bool(instance)) << toString(instance.takeError());
    ++variants;
    for (uint64_t count : counts) {
      SCOPED_TRACE("count " + std::to_string(count));
      RunOptions run;
      run.count = count;
      run.time = false;
      run.seed = count * 31 + uint64_t(c.nranks);
      run.reference = programs->spec;
      Expected<RunReport> report = runAndCheck(*world_, **instance, *compiled, run);
      ASSERT_TRUE(bool(report)) << toString(report.takeError());
      EXPECT_TRUE(report->correct) << c.source.text << "\n" << report->firstMismatches;
      calls += report->checkedCalls;
    }
    // The same variant with buffers as one memory, as its proof allows: the references are
    // computed from the inputs before each call.
    for (const BufferSharing& sharing : sharingsOf(*compiled)) {
      SCOPED_TRACE(describe(sharing));
      for (size_t k = 1; k < counts.size(); ++k) {
        SCOPED_TRACE("count " + std::to_string(counts[k]));
        RunOptions run;
        run.count = counts[k];
        run.time = false;
        run.seed = counts[k] * 37 + uint64_t(c.nranks);
        run.reference = programs->spec;
        run.sharing = sharing;
        Expected<RunReport> report = runAndCheck(*world_, **instance, *compiled, run);
        ASSERT_TRUE(bool(report)) << toString(report.takeError());
        EXPECT_TRUE(report->correct) << c.source.text << "\n" << report->firstMismatches;
        sharedCalls += report->checkedCalls;
      }
    }
  }
  EXPECT_GE(variants, 1) << "no GPU strategy compiles " << c.name;
  // The awk of scripts/gpu-check sums the words before "variants," and "calls checked".
  std::cout << "[ differential ] " << c.name << " at " << c.nranks << " ranks: " << sharedCalls
            << " calls with buffers as one memory, " << variants << " variants, " << calls
            << " calls checked\n";
}

// The accepted specs are part of the matrix: a run that cannot find them must say so.
TEST(DifferentialOneGpuSpecs, FindsTheAcceptedSpecs) {
  EXPECT_TRUE(std::filesystem::is_directory(acceptedSpecsDir()))
      << acceptedSpecsDir() << " is not a directory: set COLLC_TEST_SPECS_DIR to tests/specs";
}

INSTANTIATE_TEST_SUITE_P(Specs, DifferentialOneGpu, ::testing::ValuesIn(differentialCases()),
                         [](const ::testing::TestParamInfo<DifferentialCase>& info) {
                           return "r" + std::to_string(info.param.nranks) + "_" + info.param.name;
                         });

} // namespace
} // namespace collc
