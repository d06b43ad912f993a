#include "runtime/NvrtcLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <map>
#include <mutex>

namespace collc {

namespace {

/// The file behind a dlopen handle, or `fallback` if the loader will not say.
std::string loadedPath(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return fallback;
}

template <typename Function> void resolve(void* handle, const char* symbol, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, symbol));
}

std::string envOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

/// Resolves every function from an opened library; the names of the missing ones otherwise.
std::string resolveAll(void* handle, NvrtcLibrary& lib) {
  std::string missing;
  auto required = [&](const char* symbol, auto& function) {
    resolve(handle, symbol, function);
    if (!function)
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  required("nvrtcVersion", lib.getVersion);
  required("nvrtcGetErrorString", lib.getErrorString);
  required("nvrtcCreateProgram", lib.createProgram);
  required("nvrtcDestroyProgram", lib.destroyProgram);
  required("nvrtcCompileProgram", lib.compileProgram);
  required("nvrtcGetProgramLogSize", lib.getProgramLogSize);
  required("nvrtcGetProgramLog", lib.getProgramLog);
  required("nvrtcGetPTXSize", lib.getPTXSize);
  required("nvrtcGetPTX", lib.getPTX);
  required("nvrtcGetCUBINSize", lib.getCUBINSize);
  required("nvrtcGetCUBIN", lib.getCUBIN);
  return missing;
}

} // namespace

std::vector<std::string> nvrtcCandidates(const std::string& explicitPath) {
  if (!explicitPath.empty())
    return {explicitPath};
  if (std::string fromEnv = envOrEmpty(kNvrtcLibraryVariable); !fromEnv.empty())
    return {fromEnv};
  const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> candidates(std::begin(names), std::end(names));
  std::vector<std::string> dirs;
  if (std::string home = envOrEmpty("CUDA_HOME"); !home.empty())
    dirs.push_back(home + "/lib64");
  if (dirs.empty() || dirs.front() != "/usr/local/cuda/lib64")
    dirs.push_back("/usr/local/cuda/lib64");
  for (const std::string& dir : dirs)
    for (const char* name : names)
      candidates.push_back(dir + "/" + name);
  return candidates;
}

Expected<std::unique_ptr<NvrtcLibrary>>
loadNvrtcLibrary(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& candidate : candidates) {
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      tried += fmt::format("\n  {}: {}", candidate, why ? why : "cannot be loaded");
      continue;
    }
    auto lib = std::make_unique<NvrtcLibrary>();
    lib->path = loadedPath(handle, candidate);
    if (std::string missing = resolveAll(handle, *lib); !missing.empty()) {
      tried += fmt::format("\n  {}: loaded from {} but lacks {} (not NVRTC, or too old)", candidate,
                           lib->path, missing);
      dlclose(handle);
      continue;
    }
    int major = 0, minor = 0;
    if (lib->getVersion(&major, &minor) != NVRTC_SUCCESS) {
      tried += fmt::format("\n  {}: nvrtcVersion failed", candidate);
      dlclose(handle);
      continue;
    }
    lib->version = fmt::format("{}.{}", major, minor);
    // Optional (NVRTC 11.2 on): what it compiles for, so that an architecture it lacks is one
    // clear line rather than NVRTC's "invalid value for --gpu-architecture".
    decltype(&::nvrtcGetNumSupportedArchs) countArchs = nullptr;
    decltype(&::nvrtcGetSupportedArchs) listArchs = nullptr;
    resolve(handle, "nvrtcGetNumSupportedArchs", countArchs);
    resolve(handle, "nvrtcGetSupportedArchs", listArchs);
    int count = 0;
    if (countArchs && listArchs && countArchs(&count) == NVRTC_SUCCESS && count > 0) {
      lib->supportedArchs.resize(size_t(count));
      if (listArchs(lib->supportedArchs.data()) != NVRTC_SUCCESS)
        lib->supportedArchs.clear();
    }
    return lib; // the handle stays open for the process's lifetime
  }
  return makeError(fmt::format(
      "NVRTC not found; tried:{}\nSet {} to the path of libnvrtc.so (a CUDA toolkit's lib64, or "
      "NVIDIA's NVRTC wheel's site-packages/nvidia/cu13/lib, or nvidia/cuda_nvrtc/lib for CUDA "
      "12), or set CUDA_HOME",
      tried, kNvrtcLibraryVariable));
}

std::string unsupportedArch(const std::string& arch, const std::vector<int>& supported,
                            const std::string& version) {
  const size_t underscore = arch.find('_');
  if (supported.empty() || underscore == std::string::npos)
    return "";
  const std::string prefix = arch.substr(0, underscore + 1); // "sm_" or "compute_"
  const std::string rest = arch.substr(underscore + 1);
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || rest.empty())
    return "";
  // More digits than any architecture has: past the newest, whatever the number.
  const std::string text = rest.substr(0, digits);
  const int number = text.size() > 6 ? 999999 : std::stoi(text);
  if (std::find(supported.begin(), supported.end(), number) != supported.end())
    return "";
  const int lowest = *std::min_element(supported.begin(), supported.end());
  const int highest = *std::max_element(supported.begin(), supported.end());
  std::string message = fmt::format("CUDA {}'s NVRTC has no {}: ", version, arch);
  if (number < lowest)
    return message + fmt::format("use {}{} or newer", prefix, lowest);
  std::vector<int> sorted = supported;
  std::sort(sorted.begin(), sorted.end());
  std::string names;
  for (int each : sorted)
    names += fmt::format("{}{}{}", names.empty() ? "" : ", ", prefix, each);
  if (number > highest)
    return message + fmt::format("its newest is {}{} (it compiles for {}): use a newer CUDA",
                                 prefix, highest, names);
  return message + "it compiles for " + names;
}

namespace {
std::mutex defaultMutex;
std::string defaultPath;
} // namespace

void setDefaultNvrtcLibrary(const std::string& path) {
  std::lock_guard<std::mutex> lock(defaultMutex);
  defaultPath = path;
}

std::string defaultNvrtcLibrary() {
  std::lock_guard<std::mutex> lock(defaultMutex);
  return defaultPath;
}

Expected<const NvrtcLibrary*> nvrtcLibrary(const std::string& requestedPath) {
  const std::string explicitPath = requestedPath.empty() ? defaultNvrtcLibrary() : requestedPath;
  // One load per requested path, the failure included (its message is kept and repeated).
  struct Loaded {
    std::unique_ptr<NvrtcLibrary> library;
    std::string error;
  };
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = loaded.try_emplace(explicitPath);
  if (inserted) {
    Expected<std::unique_ptr<NvrtcLibrary>> library =
        loadNvrtcLibrary(nvrtcCandidates(explicitPath));
    if (library)
      it->second.library = std::move(*library);
    else
      it->second.error = toString(library.takeError());
  }
  if (!it->second.library)
    return makeError(it->second.error);
  return it->second.library.get();
}

} // namespace collc
