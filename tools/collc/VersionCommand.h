// `collc --version`: collc's version and commit, and the NVRTC, CUDA runtime and NCCL it was
// built with next to the ones this process loaded.
#ifndef COLLC_TOOLS_COLLC_VERSIONCOMMAND_H
#define COLLC_TOOLS_COLLC_VERSIONCOMMAND_H

namespace collc::driver {

/// Prints the version report to stdout; returns the exit status (always 0: a library that is
/// missing is reported, not an error).
int printVersion();

} // namespace collc::driver

#endif // COLLC_TOOLS_COLLC_VERSIONCOMMAND_H
