#include "tools/collc/VersionCommand.h"

#include "runtime/VersionInfo.h"

#include <llvm/Support/raw_ostream.h>

#ifndef COLLC_VERSION
#error "tools/collc/CMakeLists.txt defines COLLC_VERSION and COLLC_GIT_COMMIT"
#endif

namespace collc::driver {

int printVersion() {
  VersionInfo info = versionInfo();
  llvm::raw_ostream& out = llvm::outs();
  out << "collc " << COLLC_VERSION << " (commit " << COLLC_GIT_COMMIT << ")\n";
  // The tool and the library are installed together; a tool run against another libcollc.so
  // (LD_LIBRARY_PATH, a copied bundle) would explain surprises, so say so.
  if (info.collc != COLLC_VERSION)
    out << "  libcollc.so    " << info.collc << " (not the tool's version)\n";
  out << "  NVRTC          built with " << info.nvrtcBuilt << " (CUDA toolkit " << info.cudaToolkit
      << "), loaded ";
  if (info.nvrtcPath.empty())
    out << "not found (" << info.nvrtcError << ")\n";
  else
    out << info.nvrtcLoaded << " (" << info.nvrtcPath << ")\n";
  out << "  CUDA runtime   built with " << info.cudaRuntimeBuilt << ", loaded "
      << info.cudaRuntimeLoaded << "; driver "
      << (info.cudaDriver == "none" ? std::string("none found") : "for CUDA " + info.cudaDriver)
      << "\n";
  out << "  NCCL           built with " << info.ncclBuilt << " (nccl.h), loaded ";
  if (info.ncclPath.empty())
    out << "not found (" << info.ncclError << ")\n";
  else
    out << info.ncclLoaded << " (" << info.ncclPath << ")\n";
  return 0;
}

} // namespace collc::driver
