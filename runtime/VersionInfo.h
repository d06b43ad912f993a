// The versions of everything collc depends on, as built and as loaded: what `collc --version`
// prints and what a program may log next to its results. The libraries collc uses at run time
// (NVRTC, the CUDA runtime, NCCL) come from the machine it runs on, not the one it was built on,
// and a mismatch between the two is the first thing to rule out when a kernel misbehaves.
//
// Needs no GPU: without a CUDA driver cudaDriver is "none", without NCCL ncclLoaded is
// "not found"; neither is an error.
#ifndef COLLC_RUNTIME_VERSIONINFO_H
#define COLLC_RUNTIME_VERSIONINFO_H

#include <string>

namespace collc {

struct VersionInfo {
  std::string collc;             // libcollc.so's version, "0.1.0"
  std::string cudaToolkit;       // the toolkit libcollc.so was built with, "13.0.88"
  std::string nvrtcBuilt;        // its NVRTC (major.minor of the toolkit), "13.0"
  std::string nvrtcLoaded;       // nvrtcVersion() of the NVRTC loaded now; "not found"
  std::string nvrtcPath;         // the file it was loaded from; empty when not found
  std::string nvrtcError;        // why none was loaded (what was tried); empty when found
  std::string cudaRuntimeBuilt;  // CUDART_VERSION of the toolkit's headers, "13.0"
  std::string cudaRuntimeLoaded; // cudaRuntimeGetVersion() of the libcudart loaded now
  std::string cudaDriver;        // cudaDriverGetVersion(): newest CUDA the driver runs; "none"
  std::string ncclBuilt;         // NCCL_VERSION_CODE of the <nccl.h> built against, "2.28.9"
  std::string ncclLoaded;        // the libnccl that dlopen finds now, "2.28.3"; "not found"
  std::string ncclPath;          // the file it was loaded from; empty when not found
  std::string ncclError;         // why it was not found (dlerror's text); empty when found
};

/// Gathers the versions; loads NVRTC (nvrtcLibrary()) and NCCL (ncclLibrary()) if nothing has yet.
/// Thread-safe.
VersionInfo versionInfo();

/// "13.0" from a CUDA version number such as 13000 (CUDART_VERSION, cudaRuntimeGetVersion).
std::string cudaVersionString(int version);
/// "2.28.9" from an NCCL version code: 22809 (2.9 and later) or 2708 (before 2.9).
std::string ncclVersionCodeString(int code);

} // namespace collc

#endif // COLLC_RUNTIME_VERSIONINFO_H
