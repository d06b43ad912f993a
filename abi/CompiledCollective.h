// What the compiler hands to the runtime: the generated CUDA source and everything the host needs
// to allocate, launch and check one collective variant. Plain data; no compiler internals leak.
#ifndef COLLC_ABI_COMPILEDCOLLECTIVE_H
#define COLLC_ABI_COMPILEDCOLLECTIVE_H

#include "abi/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc {

/// Grid shape and per-thread work; the spec gives defaults, the CLI/API/tuner override them.
struct LaunchShape {
  int blocks = 4;       // thread blocks per rank (all resident at once: they wait on each other)
  int threads = 512;    // threads per block
  int vectorBytes = 16; // bytes each thread moves per memory operation (16 = one 128-bit vector)
  int unroll = 1;       // vectors each thread handles per loop iteration
  /// 1: every whole vector is stored by one instruction of its width (st.global.v4 for 16 bytes).
  /// 0: as NVVM compiles the plain store, which splits a vector that came from a load into 32-bit
  /// stores (one-shot's push, two-shot's scatter); faster at some sizes, slower at others.
  int wholeStores = 0;
};

/// "132x1024 v16 u1", and " w1" with whole stores on: how the bench's rows name a launch shape.
/// TunedVariant::text (runtime/TuningTable.h) writes the same form, with "-" for a knob it leaves
/// to the spec.
std::string launchText(const LaunchShape& shape);

/// A buffer's element count as a function of the call's count n, for one variant (nranks and the
/// row length fixed): `perCount * n + constant + perRow * round_up(n / rowLength, rowMultiple)`
/// (the last part for per-row buffers of a spec with rows: n / rowLength is the row count), or
/// with `chunked` the size of one of nranks chunks of `perCount * n + constant` (rounded up to
/// kChunkAlignElems elements). Sizes in specs can say only this (dsl/README.md), so the runtime
/// computes every size from plain numbers, without the compiler.
struct ElementCount {
  uint64_t perCount = 0;
  uint64_t constant = 0;
  bool chunked = false;
  int nranks = 2;
  uint64_t perRow = 0;      // elements per (padded) row; 0: no per-row part
  uint64_t rowLength = 0;   // the variant's row length where perRow is not 0
  uint64_t rowMultiple = 1; // rows rounded up to a multiple of this (1: no padding)

  /// The elements for a call of `count`; kTooLarge (abi/SizeMath.h) where they, or the length a
  /// chunk splits, would pass kMaxSize.
  uint64_t at(uint64_t count) const;
};

/// One symmetric scratch buffer of the spec. Its size depends on the element count of the call.
struct ScratchBuffer {
  std::string name;
  int slots = 1;
  ElementCount slotElems; // elements of one slot
  uint32_t elementBytes = 4;
  ScratchStorage storage = ScratchStorage::Elements;
  /// What the buffer must hold before the first call, repeated every `fillWidth` bytes (2 or 4);
  /// fillWidth 0: zeros. The sentinel strategy pre-fills its receive buffers with -0.0.
  uint32_t fillBits = 0;
  int fillWidth = 0;

  /// Bytes of one copy (all slots) for a call of `count` elements; kTooLarge past kMaxSize.
  uint64_t bytes(uint64_t count) const;
};

/// A user buffer of the spec after the input and the output: a fused epilogue's residual, weight.
struct AuxBuffer {
  std::string name;
  ElementCount elems;
  bool written = false; // the collective writes it (else it only reads the caller's data)
  /// The element type the spec fixes for it (`scale: f32[1]`); nullopt: the variant's (`T`).
  std::optional<ElementType> fixedType;

  /// Elements for a call of `count` elements; kTooLarge past kMaxSize.
  uint64_t elements(uint64_t count) const { return elems.at(count); }
};

/// `residualOut = reduce(in, ...) + residualIn; out = rmsnorm(residualOut, weight)`, the fused
/// AllReduce + residual add + RMSNorm of LLM decoding, as indices into CompiledCollective::aux, as
/// compiler/RowEpilogue.h finds it in a spec (for a plain baseline of the same data flow).
struct AddRmsNormEpilogue {
  int residualIn = -1, residualOut = -1, weight = -1;
};

struct CompiledCollective {
  std::string specName;
  std::string kernelName; // the extern "C" __global__ entry point
  std::string cudaSource; // self-contained: includes the ABI header text
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  SyncKind sync = SyncKind::Barrier;
  int nranks = 2;
  /// The root rank of a broadcast or reduce (a constant of the kernel); 0 for other kinds.
  int root = 0;
  LaunchShape launch;
  std::vector<ScratchBuffer> scratch;
  /// Copies of the scratch region that calls rotate through (epoch % copies): 2 alternate by
  /// parity; the sentinel strategy uses 3 (one in use, one being cleared, one ready).
  int scratchCopies = 2;
  /// Launch as a programmatic dependent launch: the kernel waits for the stream's previous kernel
  /// (griddepcontrol.wait) before it touches memory, so its start may overlap that kernel's tail.
  bool programmaticLaunch = false;
  /// Synchronization points per call (barriers); the flags region holds blocks * nranks words.
  int syncPointsPerCall = 0;
  /// Names of the spec's steps, indexed as collc_watchdog::step reports them.
  std::vector<std::string> stepNames;
  /// `rows NAME`: the row length (n must be a multiple of it); 0 for a spec without rows.
  int64_t rowLength = 0;
  float eps = 1e-6f; // rmsnorm's epsilon
  /// User buffers after the input and the output, in collc_params::aux order (RowEpilogue.h).
  std::vector<AuxBuffer> aux;
  /// The element type the spec fixes for the output (`out: fp8e4m3[n]`, a quantized output);
  /// nullopt: the variant's (`T`). The input is always `T`.
  std::optional<ElementType> outputFixedType;
  /// The output may be the input's memory (an in-place call): the verifier proved it.
  bool inPlace = false;
  /// Aux buffers that may be the same memory, as (written, read) indices into `aux`: proved too.
  /// A launch that passes the same memory for any other pair of buffers is refused.
  std::vector<std::pair<int, int>> auxAliases;
  /// Each pair above is proved on its own; true when all of them (in place included) were also
  /// proved at once, which a launch that aliases more than one pair needs: it must then alias all.
  bool aliasesTogether = false;

  /// The element type of the output, and of aux buffer k.
  ElementType outputType() const { return outputFixedType.value_or(elementTypeOf(dtype)); }
  ElementType auxType(size_t k) const {
    return k < aux.size() && aux[k].fixedType ? *aux[k].fixedType : elementTypeOf(dtype);
  }

  uint64_t flagsBytes() const { return uint64_t(launch.blocks) * uint64_t(nranks) * 8; }
  /// Elements of each rank's input and output buffer for a call of `count` elements (the kind's
  /// shapes, abi/CollectiveShapes.h: n, or n * nranks).
  uint64_t inputCount(uint64_t count) const;
  uint64_t outputCount(uint64_t count) const;
};

} // namespace collc

#endif // COLLC_ABI_COMPILEDCOLLECTIVE_H
