#include "runtime/KernelCache.h"

#include "runtime/ReadFile.h"
#include "runtime/Sha256.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <system_error>
#include <unistd.h>

namespace collc {
namespace {

// Entry layout, integers little-endian so a cache directory can be shared between machines:
//   magic[8] | u32 format version | u32 zero | u64 payload size | key[32] | sha256(payload)[32]
// followed by the payload. The key is repeated inside so that a file copied or renamed under
// another entry's name cannot be served for it.
constexpr char Magic[8] = {'C', 'O', 'L', 'L', 'C', 'K', 'C', '\x1a'};
constexpr size_t DigestSize = 32;
constexpr size_t HeaderSize = 8 + 4 + 4 + 8 + DigestSize + DigestSize;
constexpr size_t KeyHexSize = 2 * DigestSize;

void appendLE(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t readLE(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

// Keys become file names: anything but 64 lower-case hex digits could escape the directory.
bool isWellFormedKey(const std::string& key) {
  if (key.size() != KeyHexSize)
    return false;
  for (char c : key)
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f'))
      return false;
  return true;
}

Error cacheError(const std::string& message) {
  return makeError(message);
}

/// Creates `prefix` plus 8 random hex digits, readable and writable as the umask allows (a cache
/// may be shared), and opens it for writing; -1 with errno set where it cannot.
int createUniqueFile(const std::string& prefix, std::string& path) {
  static std::atomic<uint32_t> counter{0};
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint32_t salt = random() ^ (uint32_t(::getpid()) * 2654435761u) ^ counter++;
    path = prefix + toLowerHex(std::string_view(reinterpret_cast<const char*>(&salt), sizeof salt));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  errno = EEXIST;
  return -1;
}

/// Writes all of `contents` to `fd`; the error where that fails.
std::error_code writeAll(int fd, std::string_view contents) {
  while (!contents.empty()) {
    ssize_t put = ::write(fd, contents.data(), contents.size());
    if (put < 0 && errno == EINTR)
      continue;
    if (put < 0)
      return std::error_code(errno, std::generic_category());
    contents.remove_prefix(size_t(put));
  }
  return {};
}

} // namespace

std::string KernelCache::key(std::string_view source, std::string_view programName,
                             const std::vector<std::string>& options, std::string_view nvrtcVersion,
                             std::string_view arch, std::string_view outputKind) {
  Sha256 hash;
  // A length prefix before every field keeps field boundaries part of what is hashed.
  auto field = [&hash](std::string_view text) {
    std::string length;
    appendLE(length, text.size(), 8);
    hash.update(std::string_view(length));
    hash.update(std::string_view(text.data(), text.size()));
  };
  field("collc-kernel-cache-v" + std::to_string(FormatVersion));
  field(source);
  field(programName);
  field(std::to_string(options.size()));
  for (const std::string& option : options)
    field(option);
  field(nvrtcVersion);
  field(arch);
  field(outputKind);
  Sha256::Digest digest = hash.finish();
  return toLowerHex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string KernelCache::entryPath(const std::string& key) const {
  return (std::filesystem::path(dir_) / key).string();
}

std::optional<std::string> KernelCache::load(const std::string& key) const {
  if (dir_.empty() || !isWellFormedKey(key))
    return std::nullopt;
  std::optional<std::string> contents = readWholeFile(entryPath(key));
  if (!contents)
    return std::nullopt;
  std::string_view file = *contents;
  if (file.size() < HeaderSize || std::memcmp(file.data(), Magic, sizeof(Magic)) != 0)
    return std::nullopt;
  const char* header = file.data() + sizeof(Magic);
  if (readLE(header, 4) != FormatVersion || readLE(header + 4, 4) != 0)
    return std::nullopt;
  uint64_t payloadSize = readLE(header + 8, 8);
  if (payloadSize != file.size() - HeaderSize)
    return std::nullopt;
  std::string_view storedKey(header + 16, DigestSize);
  std::string_view storedChecksum(header + 16 + DigestSize, DigestSize);
  if (toLowerHex(storedKey) != key)
    return std::nullopt;
  std::string_view payload(file.data() + HeaderSize, payloadSize);
  if (sha256(payload) != storedChecksum)
    return std::nullopt;
  return std::string(payload);
}

Error KernelCache::store(const std::string& key, std::string_view payload) const {
  if (dir_.empty())
    return cacheError("no cache directory");
  if (!isWellFormedKey(key))
    return cacheError("malformed cache key '" + key + "'");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    return cacheError("cannot create cache directory '" + dir_ + "': " + ec.message());

  std::string contents(Magic, sizeof(Magic));
  contents.reserve(HeaderSize + payload.size());
  appendLE(contents, FormatVersion, 4);
  appendLE(contents, 0, 4);
  appendLE(contents, payload.size(), 8);
  contents += fromHex(key);
  contents += sha256(payload);
  contents.append(payload);

  // The temp file lives in the cache directory itself: rename() is atomic only within one file
  // system. Concurrent writers of one key each get their own temp file; the last rename wins and
  // every candidate is a complete, identical entry.
  std::string tempPath;
  int fd = createUniqueFile(entryPath(key) + ".tmp-", tempPath);
  if (fd < 0)
    return cacheError("cannot create a file in cache directory '" + dir_ +
                      "': " + std::generic_category().message(errno));
  std::error_code writeError = writeAll(fd, contents);
  if (::close(fd) != 0 && !writeError)
    writeError = std::error_code(errno, std::generic_category());
  if (!writeError && ::rename(tempPath.c_str(), entryPath(key).c_str()) != 0)
    writeError = std::error_code(errno, std::generic_category());
  if (writeError) {
    ::unlink(tempPath.c_str());
    return cacheError("cannot write cache entry '" + entryPath(key) + "': " + writeError.message());
  }
  return Error::success();
}

} // namespace collc
