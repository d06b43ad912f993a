#include "runtime/KernelCache.h"

#include <cstring>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/raw_ostream.h>

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

std::string sha256(std::string_view data) {
  llvm::SHA256 hash;
  hash.update(llvm::StringRef(data.data(), data.size()));
  return hash.final().str();
}

// Keys become file names: anything but 64 lower-case hex digits could escape the directory.
bool isWellFormedKey(const std::string& key) {
  if (key.size() != KeyHexSize)
    return false;
  for (char c : key)
    if (!llvm::isDigit(c) && !(c >= 'a' && c <= 'f'))
      return false;
  return true;
}

llvm::Error cacheError(const llvm::Twine& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

} // namespace

std::string KernelCache::key(std::string_view source, std::string_view programName,
                             llvm::ArrayRef<std::string> options, std::string_view nvrtcVersion,
                             std::string_view arch, std::string_view outputKind) {
  llvm::SHA256 hash;
  // A length prefix before every field keeps field boundaries part of what is hashed.
  auto field = [&hash](std::string_view text) {
    std::string length;
    appendLE(length, text.size(), 8);
    hash.update(llvm::StringRef(length));
    hash.update(llvm::StringRef(text.data(), text.size()));
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
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string KernelCache::entryPath(const std::string& key) const {
  llvm::SmallString<256> path(dir_);
  llvm::sys::path::append(path, key);
  return std::string(path);
}

std::optional<std::string> KernelCache::load(const std::string& key) const {
  if (dir_.empty() || !isWellFormedKey(key))
    return std::nullopt;
  // IsVolatile: read, never mmap, so a file truncated under us is a short read, not a SIGBUS.
  auto buffer = llvm::MemoryBuffer::getFile(entryPath(key), /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false, /*IsVolatile=*/true);
  if (!buffer)
    return std::nullopt;
  llvm::StringRef file = (*buffer)->getBuffer();
  if (file.size() < HeaderSize || std::memcmp(file.data(), Magic, sizeof(Magic)) != 0)
    return std::nullopt;
  const char* header = file.data() + sizeof(Magic);
  if (readLE(header, 4) != FormatVersion || readLE(header + 4, 4) != 0)
    return std::nullopt;
  uint64_t payloadSize = readLE(header + 8, 8);
  if (payloadSize != file.size() - HeaderSize)
    return std::nullopt;
  llvm::StringRef storedKey(header + 16, DigestSize);
  llvm::StringRef storedChecksum(header + 16 + DigestSize, DigestSize);
  if (llvm::toHex(storedKey, /*LowerCase=*/true) != key)
    return std::nullopt;
  std::string_view payload(file.data() + HeaderSize, payloadSize);
  if (sha256(payload) != storedChecksum)
    return std::nullopt;
  return std::string(payload);
}

llvm::Error KernelCache::store(const std::string& key, std::string_view payload) const {
  if (dir_.empty())
    return cacheError("no cache directory");
  if (!isWellFormedKey(key))
    return cacheError("malformed cache key '" + key + "'");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir_))
    return cacheError("cannot create cache directory '" + dir_ + "': " + ec.message());

  std::string contents(Magic, sizeof(Magic));
  contents.reserve(HeaderSize + payload.size());
  appendLE(contents, FormatVersion, 4);
  appendLE(contents, 0, 4);
  appendLE(contents, payload.size(), 8);
  contents += llvm::fromHex(key);
  contents += sha256(payload);
  contents.append(payload);

  // The temp file lives in the cache directory itself: rename() is atomic only within one file
  // system. Concurrent writers of one key each get their own temp file; the last rename wins and
  // every candidate is a complete, identical entry.
  int fd = -1;
  llvm::SmallString<256> tempPath;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(entryPath(key) + ".tmp-%%%%%%%%", fd, tempPath))
    return cacheError("cannot create a file in cache directory '" + dir_ + "': " + ec.message());
  std::error_code writeError;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << contents;
    out.close();
    writeError = out.error();
    // An unchecked stream error is a fatal error in raw_fd_ostream's destructor.
    out.clear_error();
  }
  if (!writeError)
    writeError = llvm::sys::fs::rename(tempPath, entryPath(key));
  if (writeError) {
    llvm::sys::fs::remove(tempPath);
    return cacheError("cannot write cache entry '" + entryPath(key) + "': " + writeError.message());
  }
  return llvm::Error::success();
}

} // namespace collc
