// One process per GPU on the GPU machine: each test starts two copies of this binary (or of
// `collc run`) through the launcher, one rank per GPU, and checks what the ranks report:
//  - the correctness matrix, stdlib specs x sync strategies x dtypes x ops x sizes, for every
//    strategy the compiler accepts (the others skip and say why);
//  - CUDA graphs: a stress graph of back-to-back calls and graph timing, per strategy;
//  - the multi-node path: COLLC_TREAT_EACH_GPU_AS_NODE=1 with NCCL's P2P and SHM transports off,
//    so the collective is handed wholly to NCCL, and the log says so;
//  - a peer that exits (the error names it, no hang) and a peer killed by a signal (the launcher
//    stops the other rank and says which rank died and how);
//  - a communicator the application made, adopted;
//  - `collc run --procs 2` and `collc run` under a launcher, against NCCL in the same run.
// Without two GPUs and NCCL every test skips and says why.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/Devices.h"
#include "runtime/NcclLibrary.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"
#include "tools/launch/Launcher.h"

#include <cctype>
#include <gtest/gtest.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>
#include <mutex>
#include <sstream>
#include <sys/stat.h>

namespace collc {
namespace {

/// Skips unless 2 GPUs and NCCL are there.
#define REQUIRE_TWO_GPUS_AND_NCCL()                                                                \
  do {                                                                                             \
    Expected<int> gpus = gpuCount();                                                               \
    if (!gpus)                                                                                     \
      GTEST_SKIP() << toString(gpus.takeError());                                                  \
    if (*gpus < 2)                                                                                 \
      GTEST_SKIP() << "no GPU pair: one process per GPU needs 2 GPUs, " << *gpus << " visible";    \
    if (ncclVersionString() == "not found")                                                        \
      GTEST_SKIP() << "NCCL not found";                                                            \
  } while (false)

/// What a launch printed, per rank, and how it ended.
struct WorldRun {
  LaunchOutcome outcome;
  std::vector<std::string> lines[2]; // stdout and stderr lines of every rank, "[rank R] ..."
  std::string all;                   // everything, for failure messages

  std::vector<std::string> withPrefix(const std::string& prefix, int rank = 0) const {
    std::vector<std::string> found;
    const std::string tag = "[rank " + std::to_string(rank) + "] ";
    for (const std::string& line : lines[0])
      if (line.rfind(tag + prefix, 0) == 0)
        found.push_back(line.substr(tag.size()));
    return found;
  }
  bool contains(const std::string& text) const { return all.find(text) != std::string::npos; }
};

LaunchOutputSink capture(WorldRun& run, std::mutex& mutex) {
  return [&run, &mutex](int rank, bool isStderr, llvm::StringRef line) {
    std::lock_guard<std::mutex> lock(mutex);
    std::string text = "[rank " + std::to_string(rank) + "] " + line.str();
    run.lines[isStderr ? 1 : 0].push_back(text);
    run.all += text + "\n";
    std::cout << text << "\n"; // the test log shows every rank as it goes
  };
}

/// Starts `gpu_procs_tests --child SCENARIO ARGS...` on 2 ranks and waits.
WorldRun runScenario(const std::vector<std::string>& scenario,
                     std::vector<std::pair<std::string, std::string>> environment = {},
                     double timeoutSeconds = 600) {
  WorldRun run;
  std::mutex mutex;
  WorldLaunch launch;
  launch.processes = 2;
  launch.args = {"--child"};
  launch.args.insert(launch.args.end(), scenario.begin(), scenario.end());
  launch.extraEnvironment = std::move(environment);
  launch.timeoutSeconds = timeoutSeconds;
  Expected<LaunchOutcome> outcome = launchWorld(launch, capture(run, mutex));
  if (!outcome) {
    run.outcome.exitCode = -1;
    run.outcome.failure = toString(outcome.takeError());
  } else {
    run.outcome = std::move(*outcome);
  }
  return run;
}

// Environment that makes the two GPUs look like two nodes: collc's node override, and NCCL
// without its peer-to-peer and shared-memory transports (so it talks over sockets, on loopback).
const std::vector<std::pair<std::string, std::string>> kTwoNodes = {
    {"COLLC_TREAT_EACH_GPU_AS_NODE", "1"},
    {"NCCL_P2P_DISABLE", "1"},
    {"NCCL_SHM_DISABLE", "1"},
    {"NCCL_IB_DISABLE", "1"},
    {"NCCL_SOCKET_IFNAME", "lo"}};

struct SpecSync {
  std::string spec;
  SyncKind sync;
};

void PrintTo(const SpecSync& c, std::ostream* os) {
  *os << c.spec << " " << name(c.sync);
}

std::vector<SpecSync> specSyncCases() {
  std::vector<SpecSync> cases;
  for (const std::string& spec : stdlibNames()) {
    // allreduce_rmsnorm(_fp8): a fused epilogue needs whole rows and sums only, which this
    // matrix (every op, odd sizes) does not give; RmsNormGpuTest.cpp and QuantGpuTest.cpp cover
    // them.
    if (spec.rfind("allreduce", 0) != 0 || spec.rfind("allreduce_rmsnorm", 0) == 0)
      continue;
    const tests::StdlibSpecFacts* facts = tests::findStdlibSpec(spec);
    for (SyncKind sync : tests::kGpuStrategies)
      if (!facts || tests::specAccepts(*facts, sync, ReduceOp::Sum)) // the ring: barrier only
        cases.push_back({spec, sync});
  }
  return cases;
}

/// Why the compiler refuses (spec, sync) for 2 ranks in f32 sum, or "" if it accepts it. Every
/// case is a strategy this version implements, so a refusal is a failure, found before any
/// process starts.
std::string refusal(const SpecSync& c) {
  Expected<SpecSource> spec = loadSpec(c.spec);
  if (!spec)
    return toString(spec.takeError());
  CompileOptions options;
  options.nranks = 2;
  options.sync = c.sync;
  std::string diagnostics;
  DiagnosticText os(diagnostics);
  Expected<CompiledCollective> compiled = compileCollective(*spec, options, os);
  if (compiled)
    return "";
  return os.str() + toString(compiled.takeError());
}

class ProcsMatrix : public ::testing::TestWithParam<SpecSync> {
protected:
  void SetUp() override { REQUIRE_TWO_GPUS_AND_NCCL(); }
};

std::string caseName(const ::testing::TestParamInfo<SpecSync>& info) {
  return info.param.spec + "_" + std::string(name(info.param.sync));
}

TEST_P(ProcsMatrix, EveryDtypeOpAndSizeMatchesFloat64Reference) {
  const SpecSync& c = GetParam();
  const std::string why = refusal(c);
  ASSERT_TRUE(why.empty()) << "the compiler refuses " << c.spec << " with sync " << name(c.sync)
                           << ": " << why;
  WorldRun run = runScenario({"matrix", c.spec, std::string(name(c.sync))});
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  size_t ops = 0;
  for (ReduceOp op : kAllReduceOps)
    ops += tests::strategyApplies(c.sync, op);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(run.withPrefix("FAIL", rank).empty()) << run.all;
    // 3 dtypes x the ops the strategy applies to x 8 sizes, every one checked.
    EXPECT_EQ(run.withPrefix("PASS", rank).size(), 3 * ops * 8) << run.all;
  }
}

TEST_P(ProcsMatrix, GraphsOfBackToBackCallsAndTiming) {
  const SpecSync& c = GetParam();
  const std::string why = refusal(c);
  ASSERT_TRUE(why.empty()) << "the compiler refuses " << c.spec << " with sync " << name(c.sync)
                           << ": " << why;
  WorldRun run = runScenario({"graph", c.spec, std::string(name(c.sync))});
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(run.withPrefix("FAIL", rank).empty()) << run.all;
    EXPECT_EQ(run.withPrefix("PASS", rank).size(), 4u) << run.all;
  }
}

INSTANTIATE_TEST_SUITE_P(Stdlib, ProcsMatrix, ::testing::ValuesIn(specSyncCases()), caseName);

class ProcsGpu : public ::testing::Test {
protected:
  void SetUp() override { REQUIRE_TWO_GPUS_AND_NCCL(); }
};

TEST_F(ProcsGpu, WorldSpanningNodesHandsTheCollectiveToNccl) {
  WorldRun run = runScenario({"nccl-path"}, kTwoNodes);
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  EXPECT_TRUE(run.withPrefix("FAIL").empty()) << run.all;
  // The world, 2 allreduce variants x 3 sizes, then 5 other kinds x 2 sizes.
  EXPECT_EQ(run.withPrefix("PASS").size(), 17u) << run.all;
  EXPECT_TRUE(run.contains("NCCL (ncclAllGather bf16 sum)")) << run.all;
  EXPECT_TRUE(run.contains("NCCL (ncclSend/ncclRecv bf16 sum)")) << run.all;
  // The log says which path, and why.
  EXPECT_TRUE(run.contains("2 ranks on 2 nodes (COLLC_TREAT_EACH_GPU_AS_NODE=1)")) << run.all;
  EXPECT_TRUE(run.contains("handed wholly to NCCL")) << run.all;
}

TEST_F(ProcsGpu, APeerThatExitedIsNamedNotWaitedFor) {
  WorldRun run = runScenario({"dead-peer"}, {}, 120);
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  std::vector<std::string> passed = run.withPrefix("PASS dead-peer");
  ASSERT_EQ(passed.size(), 1u) << run.all;
  EXPECT_NE(passed[0].find("rank 1's process"), std::string::npos) << passed[0];
  EXPECT_LT(run.outcome.seconds, 90);
}

TEST_F(ProcsGpu, ALauncherStopsTheWorldWhenARankIsKilled) {
  WorldRun run = runScenario({"kill-peer"}, {}, 120);
  EXPECT_EQ(run.outcome.exitCode, 128 + 9) << run.all;
  EXPECT_NE(run.outcome.failure.find("rank 1 (pid"), std::string::npos) << run.outcome.failure;
  EXPECT_NE(run.outcome.failure.find("was killed by signal 9"), std::string::npos)
      << run.outcome.failure;
  ASSERT_EQ(run.outcome.children.size(), 2u);
  EXPECT_TRUE(run.outcome.children[0].stoppedByUs);
  EXPECT_LT(run.outcome.seconds, 50) << "rank 0 sleeps 60 s unless the launcher stops it";
}

TEST_F(ProcsGpu, AdoptsTheApplicationsCommunicator) {
  WorldRun run = runScenario({"adopt"});
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(run.withPrefix("PASS adopt run", rank).size(), 1u) << run.all;
    EXPECT_EQ(run.withPrefix("PASS adopt communicator survives", rank).size(), 1u) << run.all;
  }
}

/// bin/collc next to this test binary (the build folder and the GPU bundle both have it).
std::string collcTool() {
  Expected<std::string> self = thisExecutable();
  if (!self) {
    consumeError(self.takeError());
    return "";
  }
  std::string tool = self->substr(0, self->rfind('/') + 1) + "collc";
  struct stat info;
  return stat(tool.c_str(), &info) == 0 ? tool : "";
}

/// Runs one `collc` command (one process: it launches its own ranks, or is launched 2x).
WorldRun runCollc(const std::vector<std::string>& args, int processes,
                  std::vector<std::pair<std::string, std::string>> environment = {}) {
  WorldRun run;
  std::mutex mutex;
  if (processes == 1) {
    LaunchSpec spec;
    spec.executable = collcTool();
    spec.args = args;
    spec.processes = 1;
    spec.timeoutSeconds = 300;
    spec.environment = [environment](int) { return environment; };
    Expected<LaunchOutcome> outcome = launchProcesses(spec, capture(run, mutex));
    if (outcome)
      run.outcome = std::move(*outcome);
    else
      run.outcome.exitCode = -1, run.outcome.failure = toString(outcome.takeError());
    return run;
  }
  WorldLaunch launch;
  launch.processes = processes;
  launch.executable = collcTool();
  launch.args = args;
  launch.extraEnvironment = std::move(environment);
  launch.timeoutSeconds = 300;
  Expected<LaunchOutcome> outcome = launchWorld(launch, capture(run, mutex));
  if (outcome)
    run.outcome = std::move(*outcome);
  else
    run.outcome.exitCode = -1, run.outcome.failure = toString(outcome.takeError());
  return run;
}

/// The results row of `collc run`: "bytes count us/op algbw busbw nccl_us nccl_sym vs_best".
std::vector<std::string> resultRow(const WorldRun& run) {
  for (const std::string& line : run.lines[0]) {
    std::istringstream words(line.substr(line.find(']') + 2));
    std::vector<std::string> fields;
    for (std::string w; words >> w;)
      fields.push_back(w);
    if (fields.size() == 8 && std::isdigit(static_cast<unsigned char>(fields[0][0])))
      return fields;
  }
  return {};
}

TEST_F(ProcsGpu, CollcRunProcsAgainstNcclInTheSameRun) {
  // The build and scripts/gpu-bundle both put collc next to this binary: missing is a failure.
  ASSERT_FALSE(collcTool().empty()) << "no collc next to this binary";
  WorldRun run = runCollc({"run", "allreduce_oneshot", "--procs", "2", "--dtype", "bf16", "--count",
                           "64K", "--nccl", "--graph-ops", "20", "--replays", "3"},
                          1);
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  EXPECT_TRUE(run.contains("correct: 4 calls checked on every rank")) << run.all;
  EXPECT_TRUE(run.contains("collectives run on collc kernels")) << run.all;
  std::vector<std::string> row = resultRow(run);
  ASSERT_EQ(row.size(), 8u) << run.all;
  EXPECT_EQ(row[0], "131072");
  EXPECT_GT(std::stod(row[2]), 0.0);
  EXPECT_NE(row[5], "-") << "NCCL was measured in the same run";
  EXPECT_NE(row[7], "-");
}

TEST_F(ProcsGpu, CollcRunUnderALauncherAcrossTwoNodesUsesNccl) {
  // The build and scripts/gpu-bundle both put collc next to this binary: missing is a failure.
  ASSERT_FALSE(collcTool().empty()) << "no collc next to this binary";
  // The launcher's variables only, no --procs: how torchrun or mpirun would start it.
  WorldRun run = runCollc({"run", "allreduce_twoshot", "--dtype", "f32", "--op", "max", "--count",
                           "4097", "--graph-ops", "10", "--replays", "3"},
                          2, kTwoNodes);
  EXPECT_EQ(run.outcome.exitCode, 0) << run.outcome.failure << "\n" << run.all;
  EXPECT_TRUE(run.contains("handed wholly to NCCL")) << run.all;
  EXPECT_TRUE(run.contains("NCCL (ncclAllReduce f32 max)")) << run.all;
  EXPECT_TRUE(run.contains("correct: 4 calls checked on every rank")) << run.all;
  EXPECT_EQ(resultRow(run).size(), 8u) << run.all;
}

TEST_F(ProcsGpu, CollcRunProcsReportsAWrongSetupOnce) {
  // The build and scripts/gpu-bundle both put collc next to this binary: missing is a failure.
  ASSERT_FALSE(collcTool().empty()) << "no collc next to this binary";
  WorldRun run = runCollc({"run", "allreduce_oneshot", "--procs", "3"}, 1);
  EXPECT_EQ(run.outcome.exitCode, 1) << run.all;
  EXPECT_TRUE(run.contains("--procs=3 needs 3 GPUs; this machine has 2")) << run.all;
}

} // namespace
} // namespace collc
