// Bundles on disk: write one, load one, and pick the cubin for a GPU. What a program that ships
// precompiled collectives calls; it needs neither NVRTC nor the compiler:
//   LoadedBundle bundle = check(loadBundle("allreduce.collb"));
//   std::string cubin = check(bundle.cubinForDevice(device));
//   auto instance = CollectiveInstance::create(world, bundle.compiled(), cubin, maxCount);
#ifndef COLLC_RUNTIME_BUNDLEFILE_H
#define COLLC_RUNTIME_BUNDLEFILE_H

#include "runtime/BundleFormat.h"
#include "runtime/Status.h"

#include <string>
#include <vector>

namespace collc {

struct LoadedBundle {
  std::string path; // where it was read from, for messages
  CollectiveBundle contents;

  const CompiledCollective& compiled() const { return contents.compiled; }
  /// The architectures the bundle has cubins for, in the order it stores them.
  std::vector<std::string> archs() const;
  /// The cubin compiled for exactly `arch` ("sm_90"); else an error naming the file and listing
  /// the architectures it has.
  Expected<std::string> cubinFor(const std::string& arch) const;
  /// The cubin for GPU `device`'s architecture (gpuArch in runtime/Devices.h).
  Expected<std::string> cubinForDevice(int device) const;
};

/// Reads and checks the bundle at `path` (decodeBundle); an unreadable file is an error too.
Expected<LoadedBundle> loadBundle(const std::string& path);

/// Whether `path` names a readable file that starts with the bundle magic: how a tool tells a
/// bundle from a spec. It says nothing of the rest of the file (loadBundle checks that).
bool isBundleFile(const std::string& path);

/// Writes `bundle` to `path` through a temporary file renamed into place, so that a reader never
/// sees half a bundle.
Error writeBundle(const std::string& path, const CollectiveBundle& bundle);

} // namespace collc

#endif // COLLC_RUNTIME_BUNDLEFILE_H
