#include "runtime/Jit.h"

#include "runtime/KernelCache.h"
#include "runtime/NvrtcLibrary.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <pwd.h>
#include <string_view>
#include <unistd.h>

namespace collc {
namespace {

Error jitError(const std::string& message) {
  return makeError(message);
}

std::string envOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

/// $HOME, else the user's home directory from the password database; empty if neither says.
std::string homeDirectory() {
  std::string home = envOrEmpty("HOME");
  if (!home.empty())
    return home;
  struct passwd entry;
  struct passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(getuid(), &entry, buffer, sizeof buffer, &found) == 0 && found && found->pw_dir)
    return found->pw_dir;
  return "";
}

} // namespace

std::string familyTargetFor(const std::string& arch, std::string_view source,
                            const std::string& nvrtcVersion, const std::vector<int>& supported) {
  if (arch.rfind("sm_", 0) != 0 ||
      source.find("__CUDA_ARCH_FAMILY_SPECIFIC__") == std::string_view::npos)
    return arch;
  const std::string digits = arch.substr(3);
  if (digits.empty() || digits.size() > 4 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return arch; // a suffix already (sm_100a, sm_100f), or not an architecture
  const int number = std::stoi(digits);
  int major = 0, minor = 0;
  if (number < 100 || std::sscanf(nvrtcVersion.c_str(), "%d.%d", &major, &minor) != 2 ||
      major * 10 + minor < 129)
    return arch;
  if (!supported.empty() &&
      std::find(supported.begin(), supported.end(), number) == supported.end())
    return arch; // unsupportedArch says so for the plain arch
  return arch + "f";
}

namespace {

/// The --gpu-architecture value. NVRTC emits PTX only for a virtual architecture and a cubin only
/// for a real one, so "sm_90" becomes "compute_90" for PTX and "compute_90" is refused for a cubin.
Expected<std::string> nvrtcArch(const std::string& arch, JitOutput output) {
  std::string_view rest(arch);
  auto consumeFront = [&rest](std::string_view prefix) {
    if (rest.substr(0, prefix.size()) != prefix)
      return false;
    rest.remove_prefix(prefix.size());
    return true;
  };
  bool isReal = consumeFront("sm_");
  bool isVirtual = !isReal && consumeFront("compute_");
  std::string_view digits = rest.substr(0, rest.find_first_not_of("0123456789"));
  std::string_view suffix = rest.substr(digits.size());
  bool wellFormed = (isReal || isVirtual) && !digits.empty() &&
                    (suffix.empty() || suffix == "a" || suffix == "f");
  if (!wellFormed)
    return jitError(fmt::format("invalid GPU architecture '{}': expected sm_XX or compute_XX (for "
                                "example sm_90)",
                                arch));
  if (output == JitOutput::Cubin && isVirtual)
    return jitError(
        fmt::format("a cubin needs a real GPU architecture (sm_{}), not '{}'", rest, arch));
  return (output == JitOutput::Ptx ? "compute_" : "sm_") + std::string(rest);
}

std::vector<std::string> nvrtcOptions(const std::string& gpuArch, const JitOptions& options) {
  std::vector<std::string> result = {"-std=c++17", "--gpu-architecture=" + gpuArch,
                                     "-default-device"};
  result.insert(result.end(), options.extraOptions.begin(), options.extraOptions.end());
  return result;
}

std::string joinOptions(const std::vector<std::string>& options) {
  std::string joined;
  for (const std::string& option : options) {
    if (!joined.empty())
      joined += ' ';
    // Quote what a shell would split, so the line can be pasted into nvcc or a bug report.
    bool quote = option.find_first_of(" \t") != std::string::npos;
    joined += quote ? "'" + option + "'" : option;
  }
  return joined;
}

/// The source as "  12 | code" lines: NVRTC's log cites line numbers of a generated file the user
/// never saw, so the error carries the file itself.
std::string numberedSource(std::string_view source) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= source.size();) {
    size_t end = std::min(source.find('\n', start), source.size());
    lines.push_back(source.substr(start, end - start));
    start = end + 1;
  }
  if (!lines.empty() && lines.back().empty())
    lines.pop_back();
  size_t width = std::max<size_t>(4, std::to_string(lines.size()).size());
  std::string result;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    while (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    result += fmt::format("{:>{}} | {}\n", i + 1, width, line);
  }
  return result;
}

class ProgramHandle {
public:
  explicit ProgramHandle(const NvrtcLibrary& nvrtc) : nvrtc_(nvrtc) {}
  ~ProgramHandle() {
    if (program_)
      nvrtc_.destroyProgram(&program_);
  }
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

private:
  const NvrtcLibrary& nvrtc_;
  nvrtcProgram program_ = nullptr;
};

std::string programLog(const NvrtcLibrary& nvrtc, nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc.getProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return "";
  std::string log(size, '\0');
  if (nvrtc.getProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return "";
  log.resize(size - 1); // the size counts the trailing NUL
  return log;
}

Expected<std::string> programImage(const NvrtcLibrary& nvrtc, nvrtcProgram program,
                                   JitOutput output) {
  size_t size = 0;
  nvrtcResult status = output == JitOutput::Ptx ? nvrtc.getPTXSize(program, &size)
                                                : nvrtc.getCUBINSize(program, &size);
  std::string image(size, '\0');
  if (status == NVRTC_SUCCESS && size > 0)
    status = output == JitOutput::Ptx ? nvrtc.getPTX(program, image.data())
                                      : nvrtc.getCUBIN(program, image.data());
  if (status != NVRTC_SUCCESS || size == 0)
    return jitError(fmt::format("NVRTC produced no {}: {}",
                                output == JitOutput::Ptx ? "PTX" : "cubin",
                                nvrtc.getErrorString(status)));
  // PTX comes NUL-terminated; std::string keeps its own terminator, so drop NVRTC's.
  if (output == JitOutput::Ptx && image.back() == '\0')
    image.pop_back();
  return image;
}

struct Compiled {
  std::string image;
  std::string log;
};

/// What ends a failed compile's error: the numbered source where the caller asked for it.
std::string sourceForErrors(std::string_view source, bool wanted) {
  return wanted ? "\nsource:\n" + numberedSource(source) : "";
}

Expected<Compiled> runNvrtc(const NvrtcLibrary& nvrtc, std::string_view source,
                            std::string_view programName, JitOutput output,
                            const std::vector<std::string>& options, bool sourceInErrors) {
  std::string sourceText(source), name(programName); // NVRTC wants NUL-terminated strings
  ProgramHandle program(nvrtc);
  nvrtcResult status =
      nvrtc.createProgram(program.out(), sourceText.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS)
    return jitError(
        fmt::format("NVRTC cannot create program '{}': {}", name, nvrtc.getErrorString(status)));
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& option : options)
    argv.push_back(option.c_str());
  status = nvrtc.compileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  std::string log = programLog(nvrtc, program.get());
  if (status != NVRTC_SUCCESS) {
    return jitError(fmt::format("NVRTC failed to compile '{}' ({}):\n{}{}options: {}{}", name,
                                nvrtc.getErrorString(status), log,
                                !log.empty() && log.back() != '\n' ? "\n" : "",
                                joinOptions(options), sourceForErrors(source, sourceInErrors)));
  }
  Expected<std::string> image = programImage(nvrtc, program.get(), output);
  if (!image)
    return image.takeError();
  return Compiled{std::move(*image), std::move(log)};
}

/// A broken cache must never break compilation; one line tells the user why nothing is cached.
void warnCacheUnusableOnce(Error error) {
  static std::atomic<bool> warned{false};
  std::string message = toString(std::move(error));
  if (!warned.exchange(true))
    std::fprintf(stderr, "collc: warning: kernel cache disabled: %s\n", message.c_str());
}

} // namespace

std::string nvrtcVersionString() {
  Expected<const NvrtcLibrary*> nvrtc = nvrtcLibrary();
  if (!nvrtc) {
    consumeError(nvrtc.takeError());
    return "not found";
  }
  return (*nvrtc)->version;
}

std::string defaultCacheDir() {
  std::string dir = envOrEmpty("COLLC_CACHE_DIR");
  if (!dir.empty())
    return dir;
  std::filesystem::path path;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  std::string xdg = envOrEmpty("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg.front() == '/') {
    path = xdg;
  } else {
    std::string home = homeDirectory();
    if (home.empty())
      return "";
    path = std::filesystem::path(home) / ".cache";
  }
  return (path / "collc").string();
}

Expected<JitResult> compileCuda(std::string_view source, std::string_view programName,
                                JitOutput output, const JitOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [start] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };

  Expected<std::string> gpuArch = nvrtcArch(options.arch, output);
  if (!gpuArch)
    return gpuArch.takeError();
  // Loaded before the cache is asked: its version is part of the key.
  Expected<const NvrtcLibrary*> nvrtc = nvrtcLibrary(options.nvrtcLibrary);
  if (!nvrtc)
    return nvrtc.takeError();
  std::string arch = options.arch;
  if (options.familyTargetWhereUsed) {
    arch = familyTargetFor(arch, source, (*nvrtc)->version, (*nvrtc)->supportedArchs);
    gpuArch = nvrtcArch(arch, output);
    if (!gpuArch)
      return gpuArch.takeError();
  }
  std::vector<std::string> nvrtcArgs = nvrtcOptions(*gpuArch, options);
  if (std::string problem = unsupportedArch(arch, (*nvrtc)->supportedArchs, (*nvrtc)->version);
      !problem.empty())
    return jitError(problem + sourceForErrors(source, options.sourceInErrors));

  std::optional<KernelCache> cache;
  std::string key;
  if (options.useCache) {
    std::string dir = options.cacheDir.empty() ? defaultCacheDir() : options.cacheDir;
    if (!dir.empty()) {
      cache.emplace(dir);
      key = KernelCache::key(source, programName, nvrtcArgs, (*nvrtc)->version, arch,
                             output == JitOutput::Ptx ? "ptx" : "cubin");
      if (std::optional<std::string> image = cache->load(key)) {
        JitResult result;
        result.image = std::move(*image);
        result.cacheHit = true;
        result.milliseconds = elapsedMs();
        return result;
      }
    }
  }

  Expected<Compiled> compiled =
      runNvrtc(**nvrtc, source, programName, output, nvrtcArgs, options.sourceInErrors);
  if (!compiled)
    return compiled.takeError();
  if (cache)
    if (Error error = cache->store(key, compiled->image))
      warnCacheUnusableOnce(std::move(error));

  JitResult result;
  result.image = std::move(compiled->image);
  result.log = std::move(compiled->log);
  result.milliseconds = elapsedMs();
  return result;
}

} // namespace collc
