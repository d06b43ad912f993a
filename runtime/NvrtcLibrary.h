// NVRTC, loaded at run time. libcollc.so does not link libnvrtc: the library is opened with dlopen
// the first time something compiles, so one build runs against the NVRTC of a CUDA toolkit, of a
// pip wheel or of any directory the caller names. The types come from <nvrtc.h> at compile time;
// the functions from the library found at run time (their C signatures are the same in CUDA 12
// and 13).
#ifndef COLLC_RUNTIME_NVRTCLIBRARY_H
#define COLLC_RUNTIME_NVRTCLIBRARY_H

#include "runtime/Status.h"

#include <memory>
#include <nvrtc.h>
#include <string>
#include <vector>

namespace collc {

/// The NVRTC functions collc calls, resolved from one loaded library; none is null in a library
/// that loadNvrtcLibrary() or nvrtcLibrary() returns.
struct NvrtcLibrary {
  decltype(&::nvrtcVersion) getVersion = nullptr;
  decltype(&::nvrtcGetErrorString) getErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) createProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) destroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) compileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) getProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) getProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) getPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) getPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) getCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) getCUBIN = nullptr;

  std::string path;    // the file the loader opened, for reports
  std::string version; // "13.0", as nvrtcVersion reported it at load time
  /// The architectures it compiles for (nvrtcGetSupportedArchs: 75, 80, ..., 121), read at load
  /// time; empty where the library cannot say.
  std::vector<int> supportedArchs;
};

/// "" if NVRTC `version` compiles for `arch` ("sm_90a", "compute_70"), given its `supported`
/// architectures (empty: unknown, so any); else one line that says it does not and what to use:
/// "CUDA 13.0's NVRTC has no sm_70: use sm_75 or newer".
std::string unsupportedArch(const std::string& arch, const std::vector<int>& supported,
                            const std::string& version);

/// The environment variable that names the NVRTC library to load (a file path, or a name the
/// loader searches for).
inline constexpr const char* kNvrtcLibraryVariable = "COLLC_NVRTC_LIBRARY";

/// Where NVRTC is looked for, in order. An explicit choice (`explicitPath`, else
/// $COLLC_NVRTC_LIBRARY) is the only candidate: a library the user named that does not load is an
/// error, not a reason to take another. Otherwise: libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so
/// through the loader's own search (LD_LIBRARY_PATH, the ld.so cache), then the same names in
/// $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
std::vector<std::string> nvrtcCandidates(const std::string& explicitPath = "");

/// Opens the first candidate that loads and resolves every function. The error names each
/// candidate tried with the loader's reason and says how to point collc at NVRTC.
Expected<std::unique_ptr<NvrtcLibrary>>
loadNvrtcLibrary(const std::vector<std::string>& candidates);

/// The process-wide NVRTC for `explicitPath` (empty: the default set by setDefaultNvrtcLibrary,
/// else $COLLC_NVRTC_LIBRARY or the search), loaded on the first call for that path
/// (thread-safe); later calls return the same library or the same failure. Libraries stay loaded
/// until the process exits.
Expected<const NvrtcLibrary*> nvrtcLibrary(const std::string& explicitPath = "");

/// Makes `path` (a file path, or a name the loader searches for) the NVRTC that nvrtcLibrary("")
/// loads from now on, ahead of $COLLC_NVRTC_LIBRARY and the search; empty: back to them. Loads
/// nothing itself: a path that does not load fails the compiles that ask for it, naming it. The
/// program's setting, where an environment variable would be the user's (collc_set_nvrtc_library).
void setDefaultNvrtcLibrary(const std::string& path);

/// The path setDefaultNvrtcLibrary set; empty if none.
std::string defaultNvrtcLibrary();

} // namespace collc

#endif // COLLC_RUNTIME_NVRTCLIBRARY_H
