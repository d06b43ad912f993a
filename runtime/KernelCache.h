// On-disk cache of compiled kernel images, keyed by everything that changes the binary.
//
// One file per entry, named by the hex key. An entry is written to a temp file in the same
// directory and renamed into place, so a reader sees either a whole old entry or a whole new one;
// a checksum still guards against what rename cannot (a crash before the data reached the disk, a
// file truncated or edited by hand), and anything that does not verify is a miss.
#ifndef COLLC_RUNTIME_KERNELCACHE_H
#define COLLC_RUNTIME_KERNELCACHE_H

#include "runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

class KernelCache {
public:
  /// Bumped whenever the key derivation or the entry layout changes, so old entries miss.
  static constexpr uint32_t FormatVersion = 1;

  /// `dir` need not exist yet: store() creates it (and its parents).
  explicit KernelCache(std::string dir) : dir_(std::move(dir)) {}

  /// 64 hex digits of sha256 over the format version and every argument. The program name is
  /// part of it because -lineinfo and -G write it into the image. `outputKind` names the image
  /// kind ("ptx", "cubin"). Each field is length-prefixed, so {"-a", "b"} and {"-ab"} differ.
  static std::string key(std::string_view source, std::string_view programName,
                         const std::vector<std::string>& options, std::string_view nvrtcVersion,
                         std::string_view arch, std::string_view outputKind);

  /// The payload stored under `key`, or nullopt when there is none or it fails verification (bad
  /// magic or version, size mismatch, checksum mismatch, unreadable file).
  std::optional<std::string> load(const std::string& key) const;

  /// Writes `payload` under `key`, replacing whatever was there (a corrupt entry included).
  Error store(const std::string& key, std::string_view payload) const;

  /// Where the entry for `key` lives.
  std::string entryPath(const std::string& key) const;

  const std::string& dir() const { return dir_; }

private:
  std::string dir_;
};

} // namespace collc

#endif // COLLC_RUNTIME_KERNELCACHE_H
