#include "tools/harness/HostData.h"

#include "compiler/interpret/Float4.h"
#include "compiler/interpret/Float8.h"
#include "tools/harness/ParallelChunks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>
#include <optional>
#include <vector>

namespace collc {

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Shifts `mantissa` right by `shift` (1..31) rounding to nearest, ties to even.
uint32_t shiftRoundEven(uint32_t mantissa, unsigned shift) {
  uint32_t kept = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    ++kept;
  return kept;
}

} // namespace

uint16_t floatToF16(float value) {
  const uint32_t bits = bitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t exponent = (bits >> 23) & 0xff;
  const uint32_t mantissa = bits & 0x7fffff;
  if (exponent == 0xff) // infinity, or NaN kept quiet with the top of its payload
    return sign | (mantissa ? 0x7e00 | (mantissa >> 13) : 0x7c00);
  // Exponent in binary16's bias; values below 2^-14 become subnormals (or zero).
  const int halfExponent = static_cast<int>(exponent) - 127 + 15;
  if (halfExponent >= 0x1f)
    return sign | 0x7c00;
  if (halfExponent <= 0) {
    if (halfExponent < -10) // below half the smallest subnormal (2^-25): rounds to zero
      return sign;
    // value = (mantissa | implicit 1) * 2^(halfExponent - 14 - 10) in units of 2^-24.
    uint32_t full = mantissa | 0x800000;
    return sign | static_cast<uint16_t>(shiftRoundEven(full, 14 - halfExponent));
  }
  // A carry out of the mantissa correctly bumps the exponent, up to infinity (0x7c00).
  uint32_t half = (static_cast<uint32_t>(halfExponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | static_cast<uint16_t>(half);
}

float f16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f)
    return floatOf(sign | 0x7f800000 | (mantissa ? 0x400000 | (mantissa << 13) : 0));
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24, exact in float
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return floatOf(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t floatToBf16(float value) {
  const uint32_t bits = bitsOf(value);
  if (std::isnan(value)) // keep the sign, force the quiet bit so truncation cannot make infinity
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest even on the upper half; a carry reaches infinity exactly when it should.
  const uint32_t rounded = bits + 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(rounded >> 16);
}

float bf16ToFloat(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

double loadElement(DType type, const void* data, uint64_t index) {
  switch (type) {
  case DType::F32: {
    float value;
    std::memcpy(&value, static_cast<const char*>(data) + index * 4, 4);
    return value;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(data) + index * 2, 2);
    return type == DType::F16 ? f16ToFloat(bits) : bf16ToFloat(bits);
  }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void storeElement(DType type, void* data, uint64_t index, float value) {
  switch (type) {
  case DType::F32:
    std::memcpy(static_cast<char*>(data) + index * 4, &value, 4);
    return;
  case DType::F16:
  case DType::BF16: {
    uint16_t bits = type == DType::F16 ? floatToF16(value) : floatToBf16(value);
    std::memcpy(static_cast<char*>(data) + index * 2, &bits, 2);
    return;
  }
  }
}

std::string formatElement(DType type, const void* data, uint64_t index) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.9g", loadElement(type, data, index));
  if (type == DType::F32) {
    uint32_t bits;
    std::memcpy(&bits, static_cast<const char*>(data) + index * 4, 4);
    os << llvm::format(" (0x%08x)", bits);
  } else {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const char*>(data) + index * 2, 2);
    os << llvm::format(" (0x%04x)", static_cast<unsigned>(bits));
  }
  return os.str();
}

namespace {
/// The DType of an element type that has one.
std::optional<DType> variantType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return DType::F32;
  case ElementType::F16:
    return DType::F16;
  case ElementType::BF16:
    return DType::BF16;
  case ElementType::F8E4M3:
  case ElementType::F4E2M1:
    return std::nullopt;
  }
  return std::nullopt;
}
} // namespace

double loadElement(ElementType type, const void* data, uint64_t index) {
  if (std::optional<DType> dtype = variantType(type))
    return loadElement(*dtype, data, index);
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (type == ElementType::F4E2M1) // element 2i in the low nibble of byte i
    return fromE2M1(uint8_t(bytes[index / 2] >> (index % 2 == 0 ? 0 : 4)));
  return fromE4M3(bytes[index]);
}

std::string formatElement(ElementType type, const void* data, uint64_t index) {
  if (std::optional<DType> dtype = variantType(type))
    return formatElement(*dtype, data, index);
  std::string text;
  llvm::raw_string_ostream os(text);
  const auto* bytes = static_cast<const uint8_t*>(data);
  os << llvm::format("%.9g", loadElement(type, data, index));
  if (type == ElementType::F4E2M1)
    os << llvm::format(" (0x%x)", unsigned(bytes[index / 2] >> (index % 2 == 0 ? 0 : 4)) & 0xf);
  else
    os << llvm::format(" (0x%02x)", unsigned(bytes[index]));
  return os.str();
}

namespace {

/// SplitMix64: a small, fast generator for the elements of one chunk.
struct SplitMix64 {
  uint64_t state;
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

/// Elements [begin, end) from the generator of their chunk: `store(i, value)` writes element i.
/// The scale 2^exponent is a table lookup (the same exact value std::ldexp gives).
template <typename Store> void fillChunk(uint64_t begin, uint64_t end, uint64_t seed, Store store) {
  static constexpr double kScale[10] = {0x1p-6, 0x1p-5, 0x1p-4, 0x1p-3, 0x1p-2,
                                        0x1p-1, 0x1p0,  0x1p1,  0x1p2,  0x1p3};
  SplitMix64 gen{seed};
  for (uint64_t i = begin; i < end; ++i) {
    uint64_t r = gen();
    // Bits 12..63 make the mantissa in [1, 2), bits 1..8 the exponent in [-6, 3], bit 0 the sign.
    double mantissa = 1.0 + static_cast<double>(r >> 12) * 0x1p-52;
    double magnitude = mantissa * kScale[((r >> 1) & 0xff) % 10];
    store(i, static_cast<float>((r & 1) ? -magnitude : magnitude));
  }
}

/// Chunk c of the elements draws from its own generator, seeded from one draw of `rng` and c, so
/// the values depend on the seed alone, not on how many threads fill them.
template <typename Store> void fillRandomAs(uint64_t count, std::mt19937_64& rng, Store store) {
  const uint64_t base = rng();
  forEachChunk(count, [&](uint64_t chunk, uint64_t begin, uint64_t end) {
    fillChunk(begin, end, base ^ (chunk * 0xd1b54a32d192ed03ull), store);
  });
}

} // namespace

void fillRandom(DType type, void* data, uint64_t count, std::mt19937_64& rng) {
  switch (type) {
  case DType::F32:
    fillRandomAs(count, rng,
                 [out = static_cast<float*>(data)](uint64_t i, float value) { out[i] = value; });
    return;
  case DType::F16:
    fillRandomAs(count, rng, [out = static_cast<uint16_t*>(data)](uint64_t i, float value) {
      out[i] = floatToF16(value);
    });
    return;
  case DType::BF16:
    fillRandomAs(count, rng, [out = static_cast<uint16_t*>(data)](uint64_t i, float value) {
      out[i] = floatToBf16(value);
    });
    return;
  }
}

void fillRandomWithSpecials(DType type, void* data, uint64_t count, std::mt19937_64& rng) {
  fillRandom(type, data, count, rng);
  // Smallest positive subnormal and a large magnitude of each type, as floats.
  const float subnormal = type == DType::F32   ? 0x1p-149f
                          : type == DType::F16 ? 0x1p-24f
                                               : 0x1p-133f;
  const float large = type == DType::F16 ? 0x1p12f : 0x1p120f;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t r = rng();
    if (r % 8 != 0)
      continue;
    const bool negative = (r >> 8) & 1;
    const float sign = negative ? -1.0f : 1.0f;
    float value = 0;
    switch ((r >> 3) % 6) {
    case 0:
      value = sign * 0.0f;
      break; // -0.0 or +0.0
    case 1:
      value = sign * subnormal * float(1 + (r >> 16) % 7);
      break;
    case 2:
      value = std::numeric_limits<float>::quiet_NaN();
      break;
    case 3:
      value = sign * std::numeric_limits<float>::infinity();
      break;
    default:
      value = sign * large * (1.0f + float((r >> 16) % 64) / 64.0f);
      break;
    }
    storeElement(type, data, i, value);
  }
}

AllReduceReference referenceAllReduce(DType type, ReduceOp op, Span<const void* const> inputs,
                                      uint64_t count) {
  AllReduceReference reference;
  reference.op = op;
  reference.value.assign(count, 0.0);
  reference.absSum.assign(count, 0.0);
  forEachChunk(count, [&](uint64_t, uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      double result = 0, absSum = 0;
      bool nan = false;
      for (size_t r = 0; r < inputs.size(); ++r) {
        double x = loadElement(type, inputs[r], i);
        nan |= std::isnan(x);
        absSum += std::fabs(x);
        if (r == 0)
          result = x;
        else if (op == ReduceOp::Sum)
          result += x;
        else if (op == ReduceOp::Max)
          result = std::max(result, x);
        else
          result = std::min(result, x);
      }
      reference.value[i] = nan ? std::numeric_limits<double>::quiet_NaN() : result;
      reference.absSum[i] = absSum;
    }
  });
  return reference;
}

double sumTolerance(DType type, int nranks) {
  switch (type) {
  case DType::F32:
    return 1e-6 * nranks;
  case DType::F16:
    return nranks * 0x1p-11;
  case DType::BF16:
    return nranks * 0x1p-8;
  }
  return 0;
}

double tinyTolerance(DType type) {
  return type == DType::F16 ? 0x1p-14 : 0x1p-126;
}

Comparison compareAllReduce(DType type, const AllReduceReference& reference,
                            Span<const void* const> inputs, const void* got, uint64_t count,
                            std::string_view label, unsigned maxReported) {
  Comparison comparison;
  llvm::raw_string_ostream os(comparison.firstMismatches);
  const double relative = sumTolerance(type, static_cast<int>(inputs.size()));
  // Whether element i passes, and the tolerance it was held to.
  auto check = [&](uint64_t i, double& value, double& tolerance) {
    value = loadElement(type, got, i);
    const double expected = reference.value[i];
    tolerance = 0;
    if (std::isnan(expected))
      return std::isnan(value);
    if (std::isinf(expected) || reference.op != ReduceOp::Sum)
      return value == expected; // false for NaN
    tolerance = relative * reference.absSum[i] + tinyTolerance(type);
    return std::fabs(value - expected) <= tolerance; // false for NaN and infinity
  };
  comparison.mismatches = countFailures(
      count, maxReported,
      [&](uint64_t i) {
        double value, tolerance;
        return check(i, value, tolerance);
      },
      [&](uint64_t i) {
        double value, tolerance;
        check(i, value, tolerance);
        const double expected = reference.value[i];
        os << label << "[" << i << "]: got " << formatElement(type, got, i) << ", expected "
           << llvm::format("%.9g", expected);
        if (reference.op == ReduceOp::Sum)
          os << llvm::format(" (|diff| %.3g > tol %.3g)", std::fabs(value - expected), tolerance);
        else
          os << " (" << name(reference.op) << " must match exactly)";
        os << "; inputs";
        for (size_t r = 0; r < inputs.size(); ++r)
          os << (r ? ", " : " ") << formatElement(type, inputs[r], i);
        os << "\n";
      });
  os.flush();
  return comparison;
}

bool fillRandomElements(ElementType type, void* data, uint64_t count, std::mt19937_64& rng) {
  std::optional<DType> dtype = variantType(type);
  if (dtype)
    fillRandom(*dtype, data, count, rng);
  return dtype.has_value();
}

} // namespace collc
