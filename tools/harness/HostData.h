// Host-side data for running and checking collectives: 16-bit float conversions, random inputs,
// a float64 reference and a tolerant comparison. No CUDA here; all of it is testable on the CPU.
#ifndef COLLC_TOOLS_HARNESS_HOSTDATA_H
#define COLLC_TOOLS_HARNESS_HOSTDATA_H

#include "abi/Types.h"
#include "runtime/Span.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

/// IEEE binary16 and bfloat16 from float and back. Rounding is to nearest, ties to even;
/// overflow gives infinity, tiny values become subnormals or zero, NaN stays a (quiet) NaN with
/// its sign, infinities stay infinities.
uint16_t floatToF16(float value);
float f16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
float bf16ToFloat(uint16_t bits);

/// Element `index` of a host buffer of `type`, as a double (exact for every type).
double loadElement(DType type, const void* data, uint64_t index);
/// Stores `value` rounded to `type` (round to nearest even).
void storeElement(DType type, void* data, uint64_t index, float value);
/// "1.25 (0x3ca0)": the value and the element's bits, for mismatch reports.
std::string formatElement(DType type, const void* data, uint64_t index);

/// The same for a buffer of any element type: an E4M3 element (fp8e4m3) loads as its value
/// (compiler/interpret/Float8.h) and prints with its byte, an E2M1 element (fp4e2m1, two a byte,
/// element 2i in the low nibble) with its nibble; the others as their DType.
double loadElement(ElementType type, const void* data, uint64_t index);
std::string formatElement(ElementType type, const void* data, uint64_t index);

/// Fills `count` elements with fresh random values: both signs, magnitudes from 2^-6 to 2^4
/// (normal in every type, no zeros, no -0.0), so that sums over up to 8 ranks stay far from
/// overflow even in f16 and max/min see many distinct values.
void fillRandom(DType type, void* data, uint64_t count, std::mt19937_64& rng);

/// Like fillRandom, but about one element in eight is one of the values that break careless
/// kernels: -0.0 and +0.0, subnormals, NaN, +-infinity, and magnitudes near the top of the type's
/// range (small enough that a sum over 8 ranks stays finite, so overflow is never borderline).
void fillRandomWithSpecials(DType type, void* data, uint64_t count, std::mt19937_64& rng);

/// fillRandom for a buffer of any element type whose values a kernel reads (f32, f16, bf16; an
/// f32 scale then holds a random magnitude of both signs, which also drives outputs into
/// saturation). False for E4M3, which no statement reads.
bool fillRandomElements(ElementType type, void* data, uint64_t count, std::mt19937_64& rng);

/// The exact answer of an AllReduce, computed in float64 from every rank's input.
struct AllReduceReference {
  ReduceOp op = ReduceOp::Sum;
  std::vector<double> value;  // op over ranks of element i (NaN if any input is NaN)
  std::vector<double> absSum; // sum over ranks of |x_r[i]|: the scale of a sum's rounding error
};
AllReduceReference referenceAllReduce(DType type, ReduceOp op, Span<const void* const> inputs,
                                      uint64_t count);

/// What a device AllReduce may get wrong. Max and min must match exactly. A sum may differ from
/// the exact value by at most
///   sumTolerance(type, nranks) * sum_r |x_r[i]| + tinyTolerance(type)
/// because the device adds in some order and rounds:
///   f32:  1e-6 * nranks      (float adds, each off by 2^-24 of the partial sum: ample room)
///   f16:  nranks * 2^-11     (one rounding to f16 at the end, or one per add when the sum is
///   bf16: nranks * 2^-8       accumulated in the 16-bit type by packed atomics, as LL128-atomic
///                             does; 2^-11 and 2^-8 are the types' unit roundoffs)
/// tinyTolerance is the type's smallest normal value, so a result flushed from subnormal to zero
/// still passes. NaN passes only where the reference is NaN; infinity only where it is the same
/// infinity.
double sumTolerance(DType type, int nranks);
double tinyTolerance(DType type);

struct Comparison {
  uint64_t mismatches = 0;
  std::string firstMismatches; // one line per reported mismatch
  bool ok() const { return mismatches == 0; }
};

/// Compares one rank's output `got` (count elements of `type`) with `reference`, reporting up
/// to `maxReported` mismatches as lines like "rank 1 out[17]: got 1.5 (0x3e00), expected 1.25
/// (|diff| 0.25 > tol 0.00049); inputs 0.5, 0.75". `inputs` are the ones the reference was
/// computed from, quoted in the report.
Comparison compareAllReduce(DType type, const AllReduceReference& reference,
                            Span<const void* const> inputs, const void* got, uint64_t count,
                            std::string_view label, unsigned maxReported = 4);

} // namespace collc

#endif // COLLC_TOOLS_HARNESS_HOSTDATA_H
