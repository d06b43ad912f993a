// heapBytesFor (runtime/HeapSize.h) against the layout CollectiveInstance carves out of the heap:
// every scratch copy on its own 2 MiB boundary, whatever was allocated before it.
#include "runtime/HeapSize.h"

#include "compiler/Compile.h"
#include "runtime/Align.h"
#include "runtime/CollectiveInstance.h"

#include <gtest/gtest.h>
#include <iostream>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

CompiledCollective compileStdlib(const char* spec, SyncKind sync) {
  Expected<SpecSource> source = loadSpec(spec);
  EXPECT_TRUE(bool(source)) << toString(source.takeError());
  CompileOptions options;
  options.dtype = DType::BF16;
  options.sync = sync;
  Expected<CompiledCollective> compiled = compileCollective(*source, options, std::cerr);
  EXPECT_TRUE(bool(compiled)) << toString(compiled.takeError());
  return *compiled;
}

/// The bytes CollectiveInstance::allocateSymmetric takes when the heap's previous allocations end
/// at `used`: padding to a page, the copies (each a whole number of pages), then the flags.
uint64_t layoutBytes(const CompiledCollective& compiled, uint64_t count, uint64_t used) {
  uint64_t end = 0;
  for (const ScratchBuffer& buffer : compiled.scratch)
    end = alignUp(end, 256) + buffer.bytes(count);
  const uint64_t copies = uint64_t(std::max(1, compiled.scratchCopies));
  const uint64_t scratchEnd = alignUp(used, kScratchAlign) + copies * alignUp(end, kScratchAlign);
  return alignUp(scratchEnd, 256) + compiled.flagsBytes() - used;
}

TEST(HeapSize, CoversPageAlignedCopiesWhereverThePreviousAllocationsEnd) {
  for (SyncKind sync : {SyncKind::Barrier, SyncKind::Sentinel, SyncKind::LL})
    for (const char* spec : {"allreduce_oneshot", "allreduce_twoshot"}) {
      const CompiledCollective compiled = compileStdlib(spec, sync);
      for (uint64_t count : {uint64_t(1), uint64_t(4097), uint64_t(1) << 20, uint64_t(3) << 22})
        for (uint64_t used : {uint64_t(0), uint64_t(256), kScratchAlign - 256, kScratchAlign + 1}) {
          SCOPED_TRACE(testing::Message() << spec << " " << name(sync) << " count " << count
                                          << " after " << used << " bytes");
          EXPECT_LE(layoutBytes(compiled, count, used), heapBytesFor(compiled, count));
        }
    }
}

TEST(HeapSize, TheLayoutHoldsEveryBufferApartWithinWholePages) {
  const CompiledCollective compiled = compileStdlib("allreduce_twoshot", SyncKind::Sentinel);
  ASSERT_EQ(compiled.scratch.size(), 2u) << "inbox and result";
  for (uint64_t count : {uint64_t(1), uint64_t(4097), uint64_t(3) << 22}) {
    SCOPED_TRACE(count);
    const ScratchLayout layout = scratchLayout(compiled, count);
    ASSERT_EQ(layout.offsets.size(), compiled.scratch.size());
    EXPECT_EQ(layout.copies, uint64_t(compiled.scratchCopies));
    EXPECT_EQ(layout.offsets[0], 0u);
    for (size_t k = 0; k < layout.offsets.size(); ++k) {
      EXPECT_EQ(layout.offsets[k] % 256, 0u);
      const uint64_t end = layout.offsets[k] + compiled.scratch[k].bytes(count);
      if (k + 1 < layout.offsets.size())
        EXPECT_LE(end, layout.offsets[k + 1]) << "buffer " << k << " overlaps the next";
      else
        EXPECT_LE(end, layout.stride) << "the last buffer runs into the next copy";
    }
    EXPECT_EQ(layout.stride % kScratchAlign, 0u);
    EXPECT_LT(layout.stride - layout.offsets.back() - compiled.scratch.back().bytes(count),
              kScratchAlign)
        << "more than a page of padding per copy";
  }
}

TEST(HeapSize, PaddingIsAtMostAPagePerCopyAndOneInFront) {
  const CompiledCollective compiled = compileStdlib("allreduce_oneshot", SyncKind::Sentinel);
  const uint64_t count = uint64_t(1) << 20;
  uint64_t data = 0;
  for (const ScratchBuffer& buffer : compiled.scratch)
    data += buffer.bytes(count);
  const uint64_t copies = uint64_t(compiled.scratchCopies);
  EXPECT_GE(heapBytesFor(compiled, count), copies * data);
  EXPECT_LE(heapBytesFor(compiled, count),
            copies * (data + kScratchAlign) + kScratchAlign + compiled.flagsBytes() + 4096);
}

/// A collective with one scratch buffer of `perCount` * n elements of bf16 (plain data, as a
/// compiled spec describes it).
CompiledCollective withScratch(uint64_t perCount, ScratchStorage storage) {
  CompiledCollective compiled;
  compiled.dtype = DType::BF16;
  ScratchBuffer buffer;
  buffer.name = "big";
  buffer.slotElems.perCount = perCount;
  buffer.elementBytes = 2;
  buffer.storage = storage;
  compiled.scratch.push_back(buffer);
  return compiled;
}

// 64 * 2^40 * n elements: 2^66 at n = 2^20, which u64 arithmetic once wrapped to a few MiB. Every
// size past 2^63 - 1 is kTooLarge, never wrapped, and sizesProblem names it.
TEST(HeapSize, SizesPast63BitsAreTooLargeNeverWrapped) {
  for (ScratchStorage storage : {ScratchStorage::Elements, ScratchStorage::Packets,
                                 ScratchStorage::AtomicLines, ScratchStorage::LL128Lines}) {
    const CompiledCollective compiled = withScratch(uint64_t(64) << 40, storage);
    const uint64_t count = uint64_t(1) << 20;
    EXPECT_EQ(compiled.scratch[0].slotElems.at(count), kTooLarge);
    EXPECT_EQ(compiled.scratch[0].bytes(count), kTooLarge);
    EXPECT_EQ(heapBytesFor(compiled, count), kTooLarge);
    EXPECT_EQ(sizesProblem(compiled, count),
              "calls of up to 1048576 elements would need more than 2^63 - 1 bytes for scratch "
              "'big': collc refuses sizes that do not fit in 63 bits");
    // One element: 2^46 elements of 2 bytes (twice that in packets), which fit.
    EXPECT_EQ(sizesProblem(compiled, 1), "");
    EXPECT_GE(heapBytesFor(compiled, 1), uint64_t(1) << 47);
    EXPECT_LT(heapBytesFor(compiled, 1), kMaxSize);
  }
}

TEST(HeapSize, SizesThatFitAreExact) {
  // 2^40 elements of 2 bytes per n, 2 copies: the heap holds 2^42 * n bytes and some pages.
  const CompiledCollective compiled = withScratch(uint64_t(1) << 40, ScratchStorage::Elements);
  const uint64_t count = (uint64_t(1) << 21) - 1; // 2^63 - 2^42 bytes of copies
  EXPECT_EQ(sizesProblem(compiled, count), "");
  EXPECT_EQ(compiled.scratch[0].bytes(count), count << 41);
  EXPECT_EQ(heapBytesFor(compiled, count), (count << 42) + (uint64_t(2) << 20) + 4096 + 64);
  EXPECT_NE(sizesProblem(compiled, uint64_t(1) << 21), "") << "2 copies of 2^62 bytes and pages";
}

TEST(HeapSize, UserBuffersPast63BitsAreRefused) {
  CompiledCollective compiled;
  compiled.kind = CollectiveKind::AllToAll; // n * nranks elements in and out
  compiled.nranks = 8;
  compiled.dtype = DType::F32;
  EXPECT_EQ(compiled.inputCount(uint64_t(1) << 61), kTooLarge);
  // 32 bytes per n in and out: 2^62 bytes fit, 2^63 do not.
  EXPECT_EQ(sizesProblem(compiled, uint64_t(1) << 57), "");
  EXPECT_EQ(sizesProblem(compiled, uint64_t(1) << 58),
            "calls of up to 288230376151711744 elements would need more than 2^63 - 1 bytes "
            "for the input: collc refuses sizes that do not fit in 63 bits");
  EXPECT_NE(sizesProblem(compiled, UINT64_MAX), "");
}

/// A world that has no GPU behind it: enough for what CollectiveInstance::create checks first.
class NoGpuWorld final : public SymmetricWorld {
public:
  NoGpuWorld() : SymmetricWorld(1 << 20) {}
  int nranks() const override { return 2; }
  const std::vector<int>& localRanks() const override { return local_; }
  int device(int) const override { return 0; }
  cudaStream_t stream(int) const override { return nullptr; }
  char* heapBase(int) const override { return nullptr; }
  char* peerHeap(int, int) const override { return nullptr; }
  std::string pathDescription() const override { return "no GPU"; }

private:
  std::vector<int> local_ = {0, 1};
};

TEST(HeapSize, AnInstanceForCallsPast63BitsIsRefusedFirst) {
  NoGpuWorld world;
  CompiledCollective compiled = withScratch(uint64_t(64) << 40, ScratchStorage::Elements);
  compiled.specName = "huge";
  Expected<std::unique_ptr<CollectiveInstance>> instance =
      CollectiveInstance::create(world, compiled, "", uint64_t(1) << 20);
  ASSERT_FALSE(bool(instance));
  const std::string message = toString(instance.takeError());
  EXPECT_NE(message.find("calls of up to 1048576 elements would need more than 2^63 - 1 bytes "
                         "for scratch 'big'"),
            std::string::npos)
      << message;
}

} // namespace
} // namespace collc
