// NVRTC front door: CUDA source in, PTX or cubin out, through the disk cache.
//
// Needs no GPU and no driver: NVRTC is a plain library, so CI compiles every generated kernel.
#ifndef COLLC_RUNTIME_JIT_H
#define COLLC_RUNTIME_JIT_H

#include "runtime/Status.h"

#include <string>
#include <string_view>
#include <vector>

namespace collc {

enum class JitOutput { Ptx, Cubin };

struct JitOptions {
  /// A real architecture ("sm_90", "sm_90a"). PTX is generated for the matching virtual
  /// architecture (compute_90), so "compute_XX" is accepted for PTX too, but not for a cubin.
  std::string arch = "sm_90";
  bool useCache = true;
  /// Empty: defaultCacheDir().
  std::string cacheDir;
  /// The NVRTC library to compile with: a file path, or a name the loader searches for. Empty:
  /// the process's default (setDefaultNvrtcLibrary), else $COLLC_NVRTC_LIBRARY, else the search
  /// that runtime/NvrtcLibrary.h describes.
  std::string nvrtcLibrary;
  /// Appended after the built-in options, so they can override them (NVRTC: last one wins).
  std::vector<std::string> extraOptions;
  /// The arch is the GPU's own ("sm_100", Devices.h: gpuArch), which may be raised to its family
  /// target ("sm_100f") for a source with family-specific code (familyTargetFor). Off, the arch is
  /// compiled as named (`collc emit --arch`).
  bool familyTargetWhereUsed = false;
  /// A failed compile's error ends with the whole source, numbered (collc emit --verbose): what
  /// NVRTC's log cites by line. Off, the error is NVRTC's log and the options.
  bool sourceInErrors = false;
};

struct JitResult {
  /// PTX text (without NVRTC's trailing NUL; c_str() supplies the one cuModuleLoadData wants) or
  /// the cubin's ELF bytes.
  std::string image;
  bool cacheHit = false;
  /// Wall time of the whole call: the NVRTC compile on a miss, the cache read on a hit.
  double milliseconds = 0;
  /// NVRTC's log (warnings) of a fresh compile; empty on a cache hit.
  std::string log;
};

/// Compiles `source` (named `programName` in NVRTC messages) with NVRTC. The options are always
/// -std=c++17, --gpu-architecture=<arch, or compute_XX for PTX>, -default-device, then
/// options.extraOptions; no include directory (generated kernels include no header).
/// An architecture the loaded NVRTC does not compile for is one line (unsupportedArch). On a
/// failed compile the error holds the NVRTC log and the full option list, and with
/// options.sourceInErrors the source with line numbers. A cache that cannot be written never
/// fails the compile (one warning on stderr).
Expected<JitResult> compileCuda(std::string_view source, std::string_view programName,
                                JitOutput output, const JitOptions& options = {});

/// The architecture to compile `source` for on a GPU of `arch` ("sm_100"): its family target
/// ("sm_100f") where the source has code for family targets (it tests
/// __CUDA_ARCH_FAMILY_SPECIFIC__, as compiler/device/quant_nvfp4.cuh's e2m1 conversion does: that
/// instruction exists only there), the architecture has a family (sm_100 and later, no suffix
/// yet) and NVRTC `nvrtcVersion` ("13.0") compiles for family targets (12.9 and later) and for
/// `arch` (`supported`, nvrtcGetSupportedArchs; empty: not known, taken as yes). Else `arch`.
std::string familyTargetFor(const std::string& arch, std::string_view source,
                            const std::string& nvrtcVersion, const std::vector<int>& supported);

/// Version of the NVRTC library loaded at run time (nvrtcLibrary()), e.g. "13.0"; "not found" when
/// none loads.
std::string nvrtcVersionString();

/// $COLLC_CACHE_DIR, else $XDG_CACHE_HOME/collc, else ~/.cache/collc; empty if there is no home.
std::string defaultCacheDir();

} // namespace collc

#endif // COLLC_RUNTIME_JIT_H
