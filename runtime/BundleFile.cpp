#include "runtime/BundleFile.h"

#include "runtime/Devices.h"
#include "runtime/ReadFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fmt/format.h>
#include <system_error>
#include <unistd.h>

namespace collc {

std::vector<std::string> LoadedBundle::archs() const {
  std::vector<std::string> archs;
  for (const BundleCubin& cubin : contents.cubins)
    archs.push_back(cubin.arch);
  return archs;
}

Expected<std::string> LoadedBundle::cubinFor(const std::string& arch) const {
  for (const BundleCubin& cubin : contents.cubins)
    if (cubin.arch == arch)
      return cubin.image;
  return makeError(fmt::format("{}: no cubin for {}; the bundle has {} (write it again with "
                               "--arch={})",
                               path, arch, fmt::join(archs(), ", "), arch));
}

Expected<std::string> LoadedBundle::cubinForDevice(int device) const {
  const std::string arch = gpuArch(device);
  if (arch.empty())
    return makeError(fmt::format("{}: cannot pick a cubin: the architecture of GPU {} is unknown",
                                 path, device));
  return cubinFor(arch);
}

Expected<LoadedBundle> loadBundle(const std::string& path) {
  std::error_code error;
  std::optional<std::string> bytes = readWholeFile(path, &error);
  if (!bytes)
    return makeError(fmt::format("cannot read bundle '{}': {}", path, error.message()));
  Expected<CollectiveBundle> contents = decodeBundle(*bytes, path);
  if (!contents)
    return contents.takeError();
  LoadedBundle bundle;
  bundle.path = path;
  bundle.contents = std::move(*contents);
  return bundle;
}

bool isBundleFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file)
    return false;
  char magic[sizeof kBundleMagic] = {};
  const bool read = std::fread(magic, 1, sizeof magic, file) == sizeof magic;
  std::fclose(file);
  return read && std::equal(std::begin(magic), std::end(magic), std::begin(kBundleMagic));
}

Error writeBundle(const std::string& path, const CollectiveBundle& bundle) {
  const std::string bytes = encodeBundle(bundle);
  const std::string temporary = fmt::format("{}.tmp{}", path, ::getpid());
  auto failed = [&](const char* what) {
    const std::string reason = std::error_code(errno, std::generic_category()).message();
    std::remove(temporary.c_str());
    return makeError(fmt::format("cannot write bundle '{}': {} failed: {}", path, what, reason));
  };
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file)
    return failed("creating it");
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (std::fclose(file) != 0 || !written)
    return failed("writing it");
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return failed("renaming it into place");
  return Error::success();
}

} // namespace collc
