// checkBufferOverlap (runtime/BufferOverlap.h): the memory a launch may be given. Addresses are
// only compared, never touched, so the test needs no GPU.
#include "runtime/BufferOverlap.h"

#include <gtest/gtest.h>
#include <vector>

namespace collc {
namespace {

/// An f32 AllReduce over 2 ranks with a residual read and a residual written, like the fused
/// AllReduce + RMSNorm.
CompiledCollective fusedAllReduce() {
  CompiledCollective compiled;
  compiled.kind = CollectiveKind::AllReduce;
  compiled.dtype = DType::F32;
  compiled.nranks = 2;
  compiled.aux = {AuxBuffer{"residual", ElementCount{1, 0, false, 2}, false, std::nullopt},
                  AuxBuffer{"residual_out", ElementCount{1, 0, false, 2}, true, std::nullopt}};
  return compiled;
}

void* at(std::vector<float>& memory, size_t element) {
  return memory.data() + element;
}

TEST(BufferOverlap, DistinctBuffersAreAccepted) {
  std::vector<float> memory(400);
  std::vector<void*> aux = {at(memory, 200), at(memory, 300)};
  EXPECT_FALSE(checkBufferOverlap(fusedAllReduce(), at(memory, 0), at(memory, 100), aux, 100));
}

// A count whose buffers would end past the address space is refused, never compared wrapped.
TEST(BufferOverlap, BuffersPastTheAddressSpaceAreRefused) {
  std::vector<float> memory(400);
  std::vector<void*> aux = {at(memory, 200), at(memory, 300)};
  const uint64_t huge = uint64_t(1) << 62; // 2^64 bytes of f32
  Error refused = checkBufferOverlap(fusedAllReduce(), at(memory, 0), at(memory, 100), aux, huge);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("buffer 'in' of a call of 4611686018427387904 elements runs "
                                   "past the end of the address space"),
            std::string::npos)
      << refused.message();
}

TEST(BufferOverlap, InPlaceOnlyWhereProved) {
  std::vector<float> memory(400);
  std::vector<void*> aux = {at(memory, 200), at(memory, 300)};
  CompiledCollective compiled = fusedAllReduce();
  Error refused = checkBufferOverlap(compiled, at(memory, 0), at(memory, 0), aux, 100);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("'in' and 'out' are the same memory"), std::string::npos)
      << refused.message();
  compiled.inPlace = true;
  EXPECT_FALSE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 0), aux, 100));
}

TEST(BufferOverlap, PartialOverlapIsRefusedEvenWhereInPlaceIsProved) {
  std::vector<float> memory(400);
  std::vector<void*> aux = {at(memory, 200), at(memory, 300)};
  CompiledCollective compiled = fusedAllReduce();
  compiled.inPlace = true;
  Error refused = checkBufferOverlap(compiled, at(memory, 0), at(memory, 50), aux, 100);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("'in' and 'out' overlap"), std::string::npos)
      << refused.message();
}

TEST(BufferOverlap, AuxPairsOnlyWhereProved) {
  std::vector<float> memory(400);
  std::vector<void*> same = {at(memory, 200), at(memory, 200)};
  CompiledCollective compiled = fusedAllReduce();
  Error refused = checkBufferOverlap(compiled, at(memory, 0), at(memory, 100), same, 100);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("'residual' and 'residual_out'"), std::string::npos)
      << refused.message();
  compiled.auxAliases = {{1, 0}};
  EXPECT_FALSE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 100), same, 100));
  // An aux buffer may not be the output, whatever the aux pairs allow.
  std::vector<void*> onOutput = {at(memory, 100), at(memory, 300)};
  EXPECT_TRUE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 100), onOutput, 100));
}

TEST(BufferOverlap, TwoPairsAtOnceOnlyWhereProvedTogether) {
  std::vector<float> memory(400);
  std::vector<void*> same = {at(memory, 200), at(memory, 200)};
  CompiledCollective compiled = fusedAllReduce();
  compiled.inPlace = true;
  compiled.auxAliases = {{1, 0}};
  // Each pair alone is proved; both at once is another memory layout.
  Error refused = checkBufferOverlap(compiled, at(memory, 0), at(memory, 0), same, 100);
  ASSERT_TRUE(refused);
  EXPECT_NE(refused.message().find("2 pairs of buffers are the same memory in one call"),
            std::string::npos)
      << refused.message();
  compiled.aliasesTogether = true;
  EXPECT_FALSE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 0), same, 100));
  // Either pair alone stays allowed.
  std::vector<void*> apart = {at(memory, 200), at(memory, 300)};
  EXPECT_FALSE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 0), apart, 100));
  EXPECT_FALSE(checkBufferOverlap(compiled, at(memory, 0), at(memory, 100), same, 100));
}

TEST(BufferOverlap, SizesFollowTheCount) {
  std::vector<float> memory(400);
  std::vector<void*> aux = {at(memory, 200), at(memory, 300)};
  // out starts 50 elements after in: apart for 50 elements, overlapping for 51.
  EXPECT_FALSE(checkBufferOverlap(fusedAllReduce(), at(memory, 0), at(memory, 50), aux, 50));
  EXPECT_TRUE(checkBufferOverlap(fusedAllReduce(), at(memory, 0), at(memory, 50), aux, 51));
  // An empty call touches nothing.
  EXPECT_FALSE(checkBufferOverlap(fusedAllReduce(), at(memory, 0), at(memory, 0), aux, 0));
}

// An fp4e2m1 output holds two elements a byte: 101 elements take 51 bytes.
TEST(BufferOverlap, AnFp4OutputTakesHalfAByteAnElement) {
  std::vector<uint8_t> bytes(2000);
  CompiledCollective compiled = fusedAllReduce();
  compiled.outputFixedType = ElementType::F4E2M1;
  std::vector<void*> aux = {bytes.data() + 1000, bytes.data() + 1500};
  // out at byte 0, in at byte 51: apart for 101 elements (51 bytes), overlapping for 103.
  EXPECT_FALSE(checkBufferOverlap(compiled, bytes.data() + 51, bytes.data(), aux, 101));
  EXPECT_TRUE(checkBufferOverlap(compiled, bytes.data() + 51, bytes.data(), aux, 103));
}

} // namespace
} // namespace collc
