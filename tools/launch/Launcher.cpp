#include "tools/launch/Launcher.h"

#include "tools/launch/ChildEnvironment.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

Error launchError(const std::string& message) {
  return makeError("launch: " + message);
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// "NAME=value" strings: the parent's environment with `overrides` replacing or adding.
std::vector<std::string>
mergedEnvironment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> entries;
  std::map<std::string, size_t> indexOf;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    indexOf[name] = entries.size();
    entries.push_back(std::move(entry));
  }
  for (const auto& [name, value] : overrides) {
    auto it = indexOf.find(name);
    if (it != indexOf.end())
      entries[it->second] = name + "=" + value;
    else
      entries.push_back(name + "=" + value);
  }
  return entries;
}

std::vector<char*> pointersTo(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings)
    pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

/// One child's pipes and the partial lines read from them.
struct ChildPipes {
  int fd[2] = {-1, -1}; // stdout, stderr read ends
  std::string pending[2];
};

void closeFd(int& fd) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}

} // namespace

std::string describeChildEnd(const ChildOutcome& child) {
  if (child.exited)
    return "exited with status " + std::to_string(child.exitStatus);
  const char* name = strsignal(child.signal);
  return "was killed by signal " + std::to_string(child.signal) + " (" + (name ? name : "unknown") +
         ")";
}

LaunchOutputSink prefixedOutputSink() {
  return [](int rank, bool isStderr, std::string_view line) {
    FILE* stream = isStderr ? stderr : stdout;
    if (rank == 0 && !isStderr)
      std::fprintf(stream, "%.*s\n", int(line.size()), line.data());
    else
      std::fprintf(stream, "[rank %d] %.*s\n", rank, int(line.size()), line.data());
    std::fflush(stream);
  };
}

Expected<LaunchOutcome> launchProcesses(const LaunchSpec& spec, const LaunchOutputSink& sink) {
  if (spec.processes < 1)
    return launchError("at least one process is needed, not " + std::to_string(spec.processes));
  if (access(spec.executable.c_str(), X_OK) != 0)
    return launchError("cannot execute '" + spec.executable + "': " + std::strerror(errno));
  const Clock::time_point start = Clock::now();
  const pid_t launcher = getpid();

  std::vector<std::string> argvStrings = {spec.executable};
  argvStrings.insert(argvStrings.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv = pointersTo(argvStrings);

  LaunchOutcome outcome;
  outcome.children.resize(spec.processes);
  std::vector<ChildPipes> pipes(spec.processes);
  std::vector<bool> running(spec.processes, false);
  // Whatever fails below, children already started are stopped and their fds closed.
  auto abandon = [&](Error err) -> Error {
    for (int r = 0; r < spec.processes; ++r) {
      if (running[r]) {
        kill(outcome.children[r].pid, SIGKILL);
        int status = 0;
        waitpid(outcome.children[r].pid, &status, 0);
      }
      closeFd(pipes[r].fd[0]);
      closeFd(pipes[r].fd[1]);
    }
    return err;
  };

  for (int r = 0; r < spec.processes; ++r) {
    // Built before fork: between fork and exec only async-signal-safe calls are allowed.
    std::vector<std::string> envStrings =
        mergedEnvironment(spec.environment ? spec.environment(r)
                                           : std::vector<std::pair<std::string, std::string>>{});
    std::vector<char*> envp = pointersTo(envStrings);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
      return abandon(launchError(std::string("pipe2: ") + std::strerror(errno)));
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return abandon(launchError(std::string("pipe2: ") + std::strerror(errno)));
    }
    pid_t pid = fork();
    if (pid < 0) {
      const int saved = errno;
      for (int fd : {out[0], out[1], err[0], err[1]})
        close(fd);
      return abandon(launchError(std::string("fork: ") + std::strerror(saved)));
    }
    if (pid == 0) {
      // The child dies with the launcher, whichever way the launcher goes.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher)
        _exit(127);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      execve(spec.executable.c_str(), argv.data(), envp.data());
      const char message[] = "launch: execve failed\n";
      (void)!write(STDERR_FILENO, message, sizeof message - 1);
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    pipes[r].fd[0] = out[0];
    pipes[r].fd[1] = err[0];
    for (int fd : {out[0], err[0]})
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    outcome.children[r].pid = pid;
    running[r] = true;
  }

  auto deliverLines = [&](int rank, int stream, bool flushAll) {
    std::string& pending = pipes[rank].pending[stream];
    size_t begin = 0;
    for (size_t newline; (newline = pending.find('\n', begin)) != std::string::npos;
         begin = newline + 1)
      sink(rank, stream == 1, std::string_view(pending).substr(begin, newline - begin));
    pending.erase(0, begin);
    if (flushAll && !pending.empty()) {
      sink(rank, stream == 1, pending);
      pending.clear();
    }
  };
  // Reads what is there; returns false if every pipe is closed.
  auto pump = [&](int waitMs) {
    std::vector<struct pollfd> polled;
    std::vector<std::pair<int, int>> owner;
    for (int r = 0; r < spec.processes; ++r)
      for (int s = 0; s < 2; ++s)
        if (pipes[r].fd[s] >= 0) {
          polled.push_back({pipes[r].fd[s], POLLIN, 0});
          owner.push_back({r, s});
        }
    if (polled.empty())
      return false;
    if (poll(polled.data(), polled.size(), waitMs) <= 0)
      return true;
    char buffer[65536];
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!(polled[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      auto [r, s] = owner[i];
      ssize_t n = read(pipes[r].fd[s], buffer, sizeof buffer);
      if (n > 0) {
        pipes[r].pending[s].append(buffer, size_t(n));
        deliverLines(r, s, false);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        deliverLines(r, s, true);
        closeFd(pipes[r].fd[s]);
      }
    }
    return true;
  };

  bool stopping = false;
  Clock::time_point killAt;
  auto stopOthers = [&] {
    stopping = true;
    killAt = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(spec.graceSeconds));
    for (int r = 0; r < spec.processes; ++r)
      if (running[r]) {
        outcome.children[r].stoppedByUs = true;
        kill(outcome.children[r].pid, SIGTERM);
      }
  };

  for (;;) {
    pump(50);
    for (int r = 0; r < spec.processes; ++r) {
      if (!running[r])
        continue;
      int status = 0;
      pid_t reaped = waitpid(outcome.children[r].pid, &status, WNOHANG);
      if (reaped != outcome.children[r].pid)
        continue;
      running[r] = false;
      ChildOutcome& child = outcome.children[r];
      child.exited = WIFEXITED(status);
      child.exitStatus = child.exited ? WEXITSTATUS(status) : 0;
      child.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      const bool failed = !child.exited || child.exitStatus != 0;
      if (failed && outcome.failure.empty() && !child.stoppedByUs) {
        outcome.exitCode = child.exited ? child.exitStatus : 128 + child.signal;
        outcome.failure = "rank " + std::to_string(r) + " (pid " + std::to_string(child.pid) +
                          ") " + describeChildEnd(child);
        bool others = false;
        for (int q = 0; q < spec.processes; ++q)
          others = others || running[q];
        if (others) {
          outcome.failure += "; stopped the other ranks";
          stopOthers();
        }
      }
    }
    bool anyRunning = false;
    for (int r = 0; r < spec.processes; ++r)
      anyRunning = anyRunning || running[r];
    if (!anyRunning)
      break;
    if (!stopping && secondsSince(start) > spec.timeoutSeconds) {
      std::string still;
      for (int r = 0; r < spec.processes; ++r)
        if (running[r])
          still += (still.empty() ? "" : ", ") + std::to_string(r);
      outcome.exitCode = 124;
      outcome.failure = "timed out after " + std::to_string(int(spec.timeoutSeconds)) +
                        " s with rank(s) " + still + " still running; stopped them";
      stopOthers();
    }
    if (stopping && Clock::now() >= killAt)
      for (int r = 0; r < spec.processes; ++r)
        if (running[r])
          kill(outcome.children[r].pid, SIGKILL);
  }
  // Whatever the children wrote last; a grandchild holding a pipe open gets two seconds.
  const Clock::time_point drainUntil = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < drainUntil && pump(20)) {
  }
  for (int r = 0; r < spec.processes; ++r)
    for (int s = 0; s < 2; ++s) {
      deliverLines(r, s, true);
      closeFd(pipes[r].fd[s]);
    }
  outcome.seconds = secondsSince(start);
  return outcome;
}

Expected<std::string> thisExecutable() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return launchError(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  return std::string(path, size_t(n));
}

Expected<std::vector<std::string>> thisCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  if (!in)
    return launchError("cannot read /proc/self/cmdline");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> words;
  std::string all = text.str(), word;
  for (char c : all) {
    if (c == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty())
    words.push_back(word);
  return words;
}

Expected<std::pair<std::string, std::string>> makeRendezvousDirectory() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/collc-rendezvous-XXXXXX";
  if (!mkdtemp(pattern.data()))
    return launchError("mkdtemp " + pattern + ": " + std::strerror(errno));
  return std::make_pair(pattern, "file:" + pattern + "/nccl-id");
}

void removeRendezvousDirectory(const std::string& directory) {
  // Only what a file rendezvous leaves: the id file, and temporaries of a rank 0 that died.
  if (DIR* dir = opendir(directory.c_str())) {
    while (struct dirent* entry = readdir(dir))
      if (std::strncmp(entry->d_name, "nccl-id", 7) == 0)
        (void)unlink((directory + "/" + entry->d_name).c_str());
    closedir(dir);
  }
  (void)rmdir(directory.c_str());
}

Expected<LaunchOutcome> launchWorld(const WorldLaunch& launch, const LaunchOutputSink& sink) {
  LaunchSpec spec;
  spec.processes = launch.processes;
  spec.args = launch.args;
  spec.timeoutSeconds = launch.timeoutSeconds;
  if (launch.executable.empty()) {
    Expected<std::string> self = thisExecutable();
    if (!self)
      return self.takeError();
    spec.executable = *self;
  } else {
    spec.executable = launch.executable;
  }
  Expected<std::pair<std::string, std::string>> directory = makeRendezvousDirectory();
  if (!directory)
    return directory.takeError();
  const std::string rendezvous = directory->second;
  // Every child's variables are made now: an environment that must not reach a child (NVLink
  // multicast asked for) fails here, before anything starts.
  std::vector<std::vector<std::pair<std::string, std::string>>> environments;
  for (int r = 0; r < launch.processes; ++r) {
    Expected<std::vector<std::pair<std::string, std::string>>> env = childEnvironment(
        r, launch.processes, rendezvous, static_cast<int>(getpid()), processEnvironment());
    if (!env) {
      removeRendezvousDirectory(directory->first);
      return env.takeError();
    }
    env->insert(env->end(), launch.extraEnvironment.begin(), launch.extraEnvironment.end());
    environments.push_back(std::move(*env));
  }
  spec.environment = [&environments](int rank) { return environments[rank]; };
  Expected<LaunchOutcome> outcome = launchProcesses(spec, sink);
  removeRendezvousDirectory(directory->first);
  return outcome;
}

} // namespace collc
