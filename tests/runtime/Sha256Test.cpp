// SHA-256 against FIPS 180-4's test vectors (and NIST's million 'a's), fed whole and in pieces; the
// kernel cache's keys and hex round trips.
#include "runtime/Sha256.h"

#include "runtime/KernelCache.h"

#include <gtest/gtest.h>
#include <string>

namespace collc {
namespace {

std::string hexDigest(std::string_view data) {
  return toLowerHex(sha256(data));
}

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(hexDigest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hexDigest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hexDigest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      hexDigest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
                "pqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(hexDigest(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Every length around the padding's edges (55, 56, 63, 64 bytes), whole and a byte at a time.
TEST(Sha256, PiecesHashAsTheWhole) {
  for (size_t length : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000}) {
    std::string data;
    for (size_t i = 0; i < length; ++i)
      data.push_back(char(i * 7 + 3));
    Sha256 pieces;
    for (char c : data)
      pieces.update(std::string_view(&c, 1));
    Sha256::Digest digest = pieces.finish();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(digest.data()), digest.size()),
              sha256(data))
        << length << " bytes";
  }
}

TEST(Sha256, StartsOverAfterFinish) {
  Sha256 hash;
  hash.update("abc");
  (void)hash.finish();
  hash.update("abc");
  Sha256::Digest digest = hash.finish();
  EXPECT_EQ(toLowerHex(std::string_view(reinterpret_cast<const char*>(digest.data()), 32)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, HexRoundTrips) {
  const std::string bytes("\x00\x01\x7f\x80\xfe\xff", 6);
  EXPECT_EQ(toLowerHex(bytes), "00017f80feff");
  EXPECT_EQ(fromHex("00017f80feff"), bytes);
  EXPECT_EQ(fromHex("00017F80FEFF"), bytes);
  EXPECT_EQ(fromHex("abc"), ""); // not whole bytes
  EXPECT_EQ(fromHex("zz"), "");  // not hex
}

// Keys name the files of existing caches: the same inputs must keep giving the same key (this one
// is SHA-256 over the length-prefixed fields, worked out independently of collc).
TEST(Sha256, KernelCacheKeysAreUnchanged) {
  EXPECT_EQ(KernelCache::key("src", "k.cu", {"-a"}, "13.0", "sm_90", "cubin"),
            "3948b382f9928ec37e85a8078f80e86f7c0cbfcf49499a8af25ae55565483aab");
}

} // namespace
} // namespace collc
