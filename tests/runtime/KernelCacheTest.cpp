// The disk cache on its own: keys, the entry format, and what happens to damaged entries.
#include "runtime/KernelCache.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace collc {
namespace {

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Consumes `error`, so a failed check reports its message instead of aborting on an unchecked
/// Error.
::testing::AssertionResult succeeded(Error error) {
  if (!error)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << toString(std::move(error));
}

void writeFile(const fs::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            (std::string("collc-kernelcache-") + test->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::vector<fs::path> filesIn(const fs::path& dir) const {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      files.push_back(entry.path());
    return files;
  }

  fs::path root_;
  // A payload with NULs and high bytes, like a cubin.
  const std::string payload_ = std::string("\x7f"
                                           "ELF\0\x01\xff payload",
                                           15) +
                               std::string(1000, 'x');
  const std::string key_ = KernelCache::key("src", "k.cu", {"-a"}, "13.0", "sm_90", "cubin");
};

TEST_F(KernelCacheTest, KeyIsDeterministicLowerCaseHex) {
  EXPECT_EQ(key_.size(), 64u);
  EXPECT_EQ(key_.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key_, KernelCache::key("src", "k.cu", {"-a"}, "13.0", "sm_90", "cubin"));
}

TEST_F(KernelCacheTest, KeyChangesWithEveryInput) {
  std::vector<std::string> keys = {
      key_,
      KernelCache::key("src ", "k.cu", {"-a"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-b"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-a", "-b"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-a"}, "13.1", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-a"}, "13.0", "sm_100", "cubin"),
      KernelCache::key("src", "k.cu", {"-a"}, "13.0", "sm_90", "ptx"),
      KernelCache::key("src", "j.cu", {"-a"}, "13.0", "sm_90", "cubin"),
      // Field boundaries count: moving text between neighbouring fields is a different key.
      KernelCache::key("src-a", "k.cu", {}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-a", "b"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-ab"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-b", "-a"}, "13.0", "sm_90", "cubin"),
      KernelCache::key("src", "k.cu", {"-a", "-b"}, "13.0", "sm_90", "cubin"),
  };
  // The duplicate {"-a", "-b"} entry is the one expected collision.
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size() - 1);
}

TEST_F(KernelCacheTest, StoreCreatesDirectoryAndLoadRoundTrips) {
  KernelCache cache((root_ / "a" / "b" / "c").string());
  EXPECT_FALSE(cache.load(key_).has_value());
  ASSERT_TRUE(succeeded(cache.store(key_, payload_)));
  std::optional<std::string> loaded = cache.load(key_);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, payload_);
  // Only the entry, named by its key: the temp file was renamed, not left behind.
  std::vector<fs::path> files = filesIn(cache.dir());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string(), key_);
  EXPECT_EQ(fs::path(cache.entryPath(key_)), files[0]);
}

TEST_F(KernelCacheTest, EmptyPayloadRoundTrips) {
  KernelCache cache(root_.string());
  ASSERT_TRUE(succeeded(cache.store(key_, "")));
  std::optional<std::string> loaded = cache.load(key_);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_TRUE(loaded->empty());
}

TEST_F(KernelCacheTest, TruncatedEntryIsMissAndStoreRepairsIt) {
  KernelCache cache(root_.string());
  ASSERT_TRUE(succeeded(cache.store(key_, payload_)));
  const std::string whole = readFile(cache.entryPath(key_));
  for (size_t length :
       {size_t(0), size_t(7), size_t(40), whole.size() - payload_.size(), whole.size() - 1}) {
    writeFile(cache.entryPath(key_), whole.substr(0, length));
    EXPECT_FALSE(cache.load(key_).has_value()) << "truncated to " << length << " bytes";
  }
  ASSERT_TRUE(succeeded(cache.store(key_, payload_)));
  EXPECT_EQ(cache.load(key_), payload_);
}

TEST_F(KernelCacheTest, CorruptEntriesAreMisses) {
  KernelCache cache(root_.string());
  ASSERT_TRUE(succeeded(cache.store(key_, payload_)));
  const std::string whole = readFile(cache.entryPath(key_));
  const size_t header = whole.size() - payload_.size();

  auto expectMissWith = [&](const std::string& damaged, const char* what) {
    writeFile(cache.entryPath(key_), damaged);
    EXPECT_FALSE(cache.load(key_).has_value()) << what;
  };
  std::string badMagic = whole;
  badMagic[0] ^= 1;
  expectMissWith(badMagic, "bad magic");
  std::string badVersion = whole;
  badVersion[8] ^= 1;
  expectMissWith(badVersion, "other format version");
  std::string badPayload = whole;
  badPayload[header + payload_.size() / 2] ^= 0x20;
  expectMissWith(badPayload, "flipped payload byte");
  std::string badChecksum = whole;
  badChecksum[header - 1] ^= 1;
  expectMissWith(badChecksum, "flipped checksum byte");
  expectMissWith(whole + "z", "trailing garbage");
  std::string badSize = whole;
  badSize[16] ^= 1;
  expectMissWith(badSize, "size field disagrees with the file");

  writeFile(cache.entryPath(key_), whole);
  EXPECT_EQ(cache.load(key_), payload_) << "the undamaged file still loads";
}

TEST_F(KernelCacheTest, EntryCopiedUnderAnotherKeyIsMiss) {
  KernelCache cache(root_.string());
  ASSERT_TRUE(succeeded(cache.store(key_, payload_)));
  std::string otherKey = KernelCache::key("other", "k.cu", {}, "13.0", "sm_90", "cubin");
  fs::copy_file(cache.entryPath(key_), cache.entryPath(otherKey));
  EXPECT_FALSE(cache.load(otherKey).has_value());
}

TEST_F(KernelCacheTest, MalformedKeysNeverTouchTheFileSystem) {
  KernelCache cache((root_ / "cache").string());
  for (const std::string& key :
       std::vector<std::string>{"", "../escape", std::string(64, 'G'), key_ + "0"}) {
    Error error = cache.store(key, payload_);
    EXPECT_TRUE(static_cast<bool>(error)) << key;
    consumeError(std::move(error));
    EXPECT_FALSE(cache.load(key).has_value()) << key;
  }
  EXPECT_FALSE(fs::exists(root_ / "escape"));
}

TEST_F(KernelCacheTest, UnwritableDirectoryIsAnErrorNotACrash) {
  // A directory below a regular file cannot be created, even by root (unlike a chmod'ed one).
  writeFile(root_ / "file", "not a directory");
  KernelCache cache((root_ / "file" / "cache").string());
  Error error = cache.store(key_, payload_);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(toString(std::move(error)).find("cache directory"), std::string::npos);
  EXPECT_FALSE(cache.load(key_).has_value());
}

TEST_F(KernelCacheTest, ConcurrentStoresOfOneKeyLeaveOneValidEntry) {
  KernelCache cache(root_.string());
  std::vector<std::thread> writers;
  writers.reserve(8);
  for (int i = 0; i < 8; ++i)
    writers.emplace_back([&] {
      for (int j = 0; j < 20; ++j) {
        EXPECT_TRUE(succeeded(cache.store(key_, payload_)));
        std::optional<std::string> loaded = cache.load(key_);
        EXPECT_EQ(loaded, payload_);
      }
    });
  for (std::thread& writer : writers)
    writer.join();
  EXPECT_EQ(filesIn(root_).size(), 1u);
}

} // namespace
} // namespace collc
