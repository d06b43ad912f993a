// The launcher of process-per-GPU worlds, with /bin/sh children standing in for ranks: the
// variables each child gets, output forwarded line by line per rank, and above all what happens
// when a child fails: the others are stopped at once and the report names the rank and how it
// ended (exit status or signal); a launch that outlives its deadline is stopped too.
#include "tools/launch/Launcher.h"

#include "runtime/LaunchEnvironment.h"

#include <csignal>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>

namespace collc {
namespace {

struct Captured {
  std::mutex mutex;
  std::vector<std::tuple<int, bool, std::string>> lines;
  LaunchOutputSink sink() {
    return [this](int rank, bool isStderr, std::string_view line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.emplace_back(rank, isStderr, std::string(line));
    };
  }
  std::vector<std::string> of(int rank, bool isStderr) {
    std::vector<std::string> out;
    for (auto& [r, e, text] : lines)
      if (r == rank && e == isStderr)
        out.push_back(text);
    return out;
  }
};

LaunchSpec shell(int processes, const std::string& script) {
  LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", script};
  spec.processes = processes;
  // Only a failing launch waits this long: far above what a busy machine needs to run the scripts.
  spec.timeoutSeconds = 300;
  spec.graceSeconds = 2;
  return spec;
}

TEST(Launcher, AllSucceedAndOutputIsForwardedPerRank) {
  LaunchSpec spec = shell(3, "echo \"out $R\"; echo \"err $R\" >&2; printf 'no newline'");
  spec.environment = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"R", std::to_string(rank)}};
  };
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 0);
  EXPECT_EQ(outcome->failure, "");
  ASSERT_EQ(outcome->children.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(outcome->children[r].exited);
    EXPECT_EQ(outcome->children[r].exitStatus, 0);
    EXPECT_EQ(captured.of(r, false),
              (std::vector<std::string>{"out " + std::to_string(r), "no newline"}));
    EXPECT_EQ(captured.of(r, true), std::vector<std::string>{"err " + std::to_string(r)});
  }
}

TEST(Launcher, ChildrenGetTheWorldVariables) {
  WorldLaunch launch;
  launch.processes = 2;
  launch.executable = "/bin/sh";
  launch.args = {"-c",
                 "echo $RANK $WORLD_SIZE $LOCAL_RANK $NCCL_NVLS_ENABLE $COLLC_RENDEZVOUS "
                 "$COLLC_LAUNCHER_PID $EXTRA; test -d \"$(dirname ${COLLC_RENDEZVOUS#file:})\""};
  launch.extraEnvironment = {{"EXTRA", "yes"}};
  Captured captured;
  Expected<LaunchOutcome> outcome = launchWorld(launch, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 0) << outcome->failure;
  std::string rendezvous;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> lines = captured.of(r, false);
    ASSERT_EQ(lines.size(), 1u);
    std::istringstream words(lines[0]);
    std::string rank, size, local, nvls, address, launcher, extra;
    words >> rank >> size >> local >> nvls >> address >> launcher >> extra;
    EXPECT_EQ(rank, std::to_string(r));
    EXPECT_EQ(size, "2");
    EXPECT_EQ(local, std::to_string(r));
    EXPECT_EQ(nvls, "0");
    EXPECT_EQ(address.rfind("file:/", 0), 0u) << address;
    EXPECT_EQ(launcher, std::to_string(getpid()));
    EXPECT_EQ(extra, "yes");
    if (r == 0)
      rendezvous = address;
    EXPECT_EQ(address, rendezvous) << "one rendezvous for the whole world";
  }
  // The private rendezvous directory is gone afterwards.
  std::string directory = rendezvous.substr(5, rendezvous.rfind('/') - 5);
  struct stat info;
  EXPECT_NE(stat(directory.c_str(), &info), 0) << directory;
}

TEST(Launcher, AFailingChildStopsTheOthersAndIsNamed) {
  // Rank 1 fails at once; ranks 0 and 2 would sleep for a minute.
  LaunchSpec spec = shell(3, "if [ \"$R\" = 1 ]; then echo dying >&2; exit 3; fi; sleep 60");
  spec.environment = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"R", std::to_string(rank)}};
  };
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 3);
  EXPECT_NE(outcome->failure.find("rank 1 (pid " + std::to_string(outcome->children[1].pid) +
                                  ") exited with status 3; stopped the other ranks"),
            std::string::npos)
      << outcome->failure;
  EXPECT_LT(outcome->seconds, 45) << "the sleepers must have been stopped, not waited for";
  for (int r : {0, 2}) {
    EXPECT_TRUE(outcome->children[r].stoppedByUs);
    EXPECT_FALSE(outcome->children[r].exited);
    EXPECT_EQ(outcome->children[r].signal, SIGTERM);
  }
  EXPECT_EQ(captured.of(1, true), std::vector<std::string>{"dying"});
}

TEST(Launcher, AChildKilledByASignalIsReported) {
  LaunchSpec spec = shell(2, "if [ \"$R\" = 1 ]; then kill -9 $$; fi; sleep 60");
  spec.environment = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"R", std::to_string(rank)}};
  };
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 128 + 9);
  EXPECT_NE(outcome->failure.find("rank 1 (pid"), std::string::npos) << outcome->failure;
  EXPECT_NE(outcome->failure.find("was killed by signal 9"), std::string::npos) << outcome->failure;
  EXPECT_LT(outcome->seconds, 45);
}

TEST(Launcher, ChildrenThatIgnoreSigtermAreKilledAfterTheGrace) {
  LaunchSpec spec = shell(2, "if [ \"$R\" = 1 ]; then exit 1; fi; trap '' TERM; sleep 60");
  spec.graceSeconds = 0.5;
  spec.environment = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"R", std::to_string(rank)}};
  };
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 1);
  EXPECT_LT(outcome->seconds, 45);
}

TEST(Launcher, TheDeadlineStopsEveryone) {
  LaunchSpec spec = shell(2, "sleep 60");
  spec.timeoutSeconds = 0.5;
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 124);
  EXPECT_NE(outcome->failure.find("timed out after 0 s with rank(s) 0, 1 still running"),
            std::string::npos)
      << outcome->failure;
  EXPECT_LT(outcome->seconds, 45);
}

TEST(Launcher, AChildThatFinishesEarlyWithSuccessStopsNobody) {
  // A rank may legitimately finish first; only failures stop the world.
  LaunchSpec spec = shell(2, "if [ \"$R\" = 1 ]; then exit 0; fi; sleep 0.3; echo done");
  spec.environment = [](int rank) {
    return std::vector<std::pair<std::string, std::string>>{{"R", std::to_string(rank)}};
  };
  Captured captured;
  Expected<LaunchOutcome> outcome = launchProcesses(spec, captured.sink());
  ASSERT_TRUE(bool(outcome)) << toString(outcome.takeError());
  EXPECT_EQ(outcome->exitCode, 0);
  EXPECT_EQ(captured.of(0, false), std::vector<std::string>{"done"});
}

TEST(Launcher, BadLaunchesAreErrors) {
  LaunchSpec spec = shell(0, "true");
  Expected<LaunchOutcome> none = launchProcesses(spec, [](int, bool, std::string_view) {});
  ASSERT_FALSE(bool(none));
  EXPECT_NE(toString(none.takeError()).find("at least one process"), std::string::npos);
  spec = shell(1, "true");
  spec.executable = "/nonexistent/collc";
  Expected<LaunchOutcome> missing = launchProcesses(spec, [](int, bool, std::string_view) {});
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(toString(missing.takeError()).find("cannot execute '/nonexistent/collc'"),
            std::string::npos);
}

TEST(Launcher, DescribesHowAChildEnded) {
  ChildOutcome exited;
  exited.exited = true;
  exited.exitStatus = 2;
  EXPECT_EQ(describeChildEnd(exited), "exited with status 2");
  ChildOutcome killed;
  killed.signal = SIGSEGV;
  EXPECT_EQ(describeChildEnd(killed).rfind("was killed by signal 11 (", 0), 0u);
}

TEST(Launcher, KnowsItsOwnCommandLine) {
  Expected<std::string> exe = thisExecutable();
  ASSERT_TRUE(bool(exe)) << toString(exe.takeError());
  EXPECT_NE(exe->find("tools_tests"), std::string::npos) << *exe;
  Expected<std::vector<std::string>> words = thisCommandLine();
  ASSERT_TRUE(bool(words)) << toString(words.takeError());
  ASSERT_FALSE(words->empty());
  EXPECT_NE((*words)[0].find("tools_tests"), std::string::npos);
}

} // namespace
} // namespace collc
