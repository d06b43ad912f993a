// The device helpers every generated kernel starts with: the CUDA files of compiler/device/,
// embedded at build time without their comment lines. The code generator pastes them inside the
// kernel's namespace, in this order:
//   1. kTypesFile (u64, and f16 and bf16, the half-precision element types);
//   2. what it prints itself: `typedef <cudaTypeName(dtype)> T;` and the constants kRanks, kBlocks,
//      kThreads, kVec, kWatchdog, kWholeStores, kSyncPoints (with barriers), kScratchCopies,
//      `typedef <uint4, uint2, unsigned int or unsigned short> Word;` and kChunkAlign;
//   3. elementFile(dtype), combineFile(op), then kCommonDeviceFiles in order;
//   4. the files of the operations the kernel has (ir::helperFile: each strategy's, and rows.cuh
//      when a step is split by rows), in the order CudaCodeGen.cpp gives.
// tests/runtime/DeviceFilesNvrtcTest.cpp compiles each file this way for every type and arch.
#ifndef COLLC_COMPILER_DEVICEPRELUDE_H
#define COLLC_COMPILER_DEVICEPRELUDE_H

#include "abi/Types.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collc {

/// Every file of compiler/device/ as embedded: {file name, text without its comment lines}.
const std::vector<std::pair<std::string_view, std::string_view>>& deviceFiles();

/// One embedded file as pasted into a kernel: a blank line, a line naming it, then its text. An
/// unknown name is an internal error.
std::string deviceFile(std::string_view name);

/// Pasted before the variant's constants: u64 and the half-precision element types.
inline constexpr std::string_view kTypesFile = "types.cuh";
/// Bits, to_float, from_float and the atomic adds of one element type.
std::string_view elementFile(DType dtype);
/// combine(float, float) for one reduction operator.
std::string_view combineFile(ReduceOp op);
/// Every kernel's helpers after the element and combine files, in this order.
inline constexpr std::string_view kCommonDeviceFiles[] = {
    "memory.cuh",   "chunks.cuh",     "vectors.cuh",    "reduce.cuh",
    "watchdog.cuh", "line_group.cuh", "kernel_head.cuh"};

} // namespace collc

#endif // COLLC_COMPILER_DEVICEPRELUDE_H
