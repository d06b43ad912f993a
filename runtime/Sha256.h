// SHA-256 (FIPS 180-4): the kernel cache's keys and its entries' checksums.
#ifndef COLLC_RUNTIME_SHA256_H
#define COLLC_RUNTIME_SHA256_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace collc {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  /// Hashes `data` after everything given before.
  void update(std::string_view data);
  /// The digest of everything given; the hash starts over afterwards.
  Digest finish();

private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_;
  size_t blockBytes_ = 0;
  uint64_t totalBytes_ = 0;
};

/// The digest's 32 bytes as a string.
std::string sha256(std::string_view data);
/// Lower-case hex of `bytes`, two digits a byte.
std::string toLowerHex(std::string_view bytes);
/// The bytes that lower- or upper-case hex `hex` spells; empty where it is not hex of whole bytes.
std::string fromHex(std::string_view hex);

} // namespace collc

#endif // COLLC_RUNTIME_SHA256_H
