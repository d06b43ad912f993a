#include "runtime/ByteCodec.h"

namespace collc {

void ByteReader::fail(const char* field, const std::string& message) {
  if (error_.empty())
    error_ = std::string("field '") + field + "': " + message;
}

uint64_t ByteReader::little(const char* field, int width) {
  if (failed())
    return 0;
  if (remaining() < uint64_t(width)) {
    fail(field, "the data ends inside it");
    return 0;
  }
  uint64_t value = 0;
  for (int i = 0; i < width; ++i)
    value |= uint64_t(uint8_t(data_[offset_ + i])) << (8 * i);
  offset_ += width;
  return value;
}

bool ByteReader::boolean(const char* field) {
  uint8_t value = u8(field);
  if (value > 1)
    fail(field, "a flag must be 0 or 1, not " + std::to_string(value));
  return value == 1;
}

std::string ByteReader::string(const char* field) {
  uint64_t size = u64(field);
  if (failed())
    return {};
  if (size > remaining()) {
    fail(field, "its length " + std::to_string(size) + " runs past the data (" +
                    std::to_string(remaining()) + " bytes left)");
    return {};
  }
  std::string value(data_.substr(offset_, size));
  offset_ += size;
  return value;
}

uint64_t ByteReader::count(const char* field, uint64_t minItemBytes) {
  uint64_t value = u64(field);
  if (!failed() && minItemBytes > 0 && value > remaining() / minItemBytes) {
    fail(field, "a count of " + std::to_string(value) + " items cannot fit in the " +
                    std::to_string(remaining()) + " bytes left");
    return 0;
  }
  return failed() ? 0 : value;
}

} // namespace collc
