#include "runtime/VersionInfo.h"

#include "runtime/Jit.h"
#include "runtime/NcclLibrary.h"
#include "runtime/NvrtcLibrary.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#ifndef COLLC_LIBRARY_VERSION
#error "runtime/CMakeLists.txt defines COLLC_LIBRARY_VERSION for this file"
#endif
#ifndef COLLC_CUDA_TOOLKIT_VERSION
#error "runtime/CMakeLists.txt defines COLLC_CUDA_TOOLKIT_VERSION for this file"
#endif

namespace collc {

std::string cudaVersionString(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::string ncclVersionCodeString(int code) {
  NcclLibrary decoder; // only its version arithmetic, which follows NCCL_VERSION's two forms
  decoder.versionCode = code;
  return decoder.versionString();
}

VersionInfo versionInfo() {
  VersionInfo info;
  info.collc = COLLC_LIBRARY_VERSION;
  info.cudaToolkit = COLLC_CUDA_TOOLKIT_VERSION;
  // NVRTC's header has no version macro; the header built against is the toolkit's own.
  std::string toolkit = info.cudaToolkit;
  size_t secondDot = toolkit.find('.', toolkit.find('.') + 1);
  info.nvrtcBuilt = toolkit.substr(0, secondDot);
  if (Expected<const NvrtcLibrary*> nvrtc = nvrtcLibrary()) {
    info.nvrtcLoaded = (*nvrtc)->version;
    info.nvrtcPath = (*nvrtc)->path;
  } else {
    info.nvrtcLoaded = "not found";
    info.nvrtcError = toString(nvrtc.takeError());
  }
  info.cudaRuntimeBuilt = cudaVersionString(CUDART_VERSION);

  int version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess)
    info.cudaRuntimeLoaded = cudaVersionString(version);
  else
    info.cudaRuntimeLoaded = "unknown";
  // 0 with success when no driver is installed: the runtime loads the driver lazily.
  version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0)
    info.cudaDriver = cudaVersionString(version);
  else
    info.cudaDriver = "none";
  (void)cudaGetLastError();

  info.ncclBuilt = ncclVersionCodeString(NCCL_VERSION_CODE);
  if (Expected<const NcclLibrary*> nccl = ncclLibrary()) {
    info.ncclLoaded = (*nccl)->versionString();
    info.ncclPath = (*nccl)->path;
  } else {
    info.ncclLoaded = "not found";
    info.ncclError = toString(nccl.takeError());
  }
  return info;
}

} // namespace collc
