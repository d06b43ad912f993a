// heapBytesFor (runtime/HeapSize.h) against the layout CollectiveInstance carves out of the heap:
// every scratch copy on its own 2 MiB boundary, whatever was allocated before it.
#include "runtime/HeapSize.h"

#include "compiler/Compile.h"
#include "pipeline/CompilerErrors.h"
#include "runtime/Align.h"

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

CompiledCollective compileStdlib(const char* spec, SyncKind sync) {
  Expected<SpecSource> source = fromCompiler(loadSpec(spec));
  EXPECT_TRUE(bool(source)) << toString(source.takeError());
  CompileOptions options;
  options.dtype = DType::BF16;
  options.sync = sync;
  Expected<CompiledCollective> compiled =
      fromCompiler(compileCollective(*source, options, llvm::errs()));
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

} // namespace
} // namespace collc
