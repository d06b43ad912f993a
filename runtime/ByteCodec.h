// Little-endian integers and length-prefixed strings into a byte string and back: the primitives
// of the bundle format (docs/bundles.md). The reader never reads past its data: a read that would
// fails, names the field, and every later read fails too, so a decoder checks once at the end.
#ifndef COLLC_RUNTIME_BYTECODEC_H
#define COLLC_RUNTIME_BYTECODEC_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace collc {

class ByteWriter {
public:
  void u8(uint8_t value) { bytes_.push_back(char(value)); }
  void u32(uint32_t value) { little(value, 4); }
  void u64(uint64_t value) { little(value, 8); }
  void i32(int32_t value) { u32(uint32_t(value)); }
  void i64(int64_t value) { u64(uint64_t(value)); }
  void boolean(bool value) { u8(value ? 1 : 0); }
  /// A u64 byte count, then the bytes.
  void string(std::string_view value) {
    u64(value.size());
    bytes_.append(value);
  }
  void raw(std::string_view value) { bytes_.append(value); }
  const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

private:
  void little(uint64_t value, int width) {
    for (int i = 0; i < width; ++i)
      bytes_.push_back(char((value >> (8 * i)) & 0xff));
  }
  std::string bytes_;
};

class ByteReader {
public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  uint8_t u8(const char* field) { return uint8_t(little(field, 1)); }
  uint32_t u32(const char* field) { return uint32_t(little(field, 4)); }
  uint64_t u64(const char* field) { return little(field, 8); }
  int32_t i32(const char* field) { return int32_t(u32(field)); }
  int64_t i64(const char* field) { return int64_t(u64(field)); }
  /// 0 or 1; any other byte fails.
  bool boolean(const char* field);
  std::string string(const char* field);
  /// A count of items that each take at least `minItemBytes` bytes: fails where the data left
  /// cannot hold that many, so a corrupt count never allocates without bound.
  uint64_t count(const char* field, uint64_t minItemBytes);

  bool failed() const { return !error_.empty(); }
  /// What failed first: "field 'NAME': ..."; empty while nothing has.
  const std::string& error() const { return error_; }
  /// Fails with `message` about `field` unless something failed already.
  void fail(const char* field, const std::string& message);
  uint64_t remaining() const { return data_.size() - offset_; }

private:
  uint64_t little(const char* field, int width);

  std::string_view data_;
  uint64_t offset_ = 0;
  std::string error_;
};

} // namespace collc

#endif // COLLC_RUNTIME_BYTECODEC_H
