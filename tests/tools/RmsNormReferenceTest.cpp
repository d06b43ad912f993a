// The float64 reference of the fused AllReduce + residual add + RMSNorm
// (tools/harness/RmsNormReference.h): hand-computed rows, a model of the kernel's float arithmetic
// that must pass in every type, and wrong outputs that must be named.
#include "tools/harness/RmsNormReference.h"

#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace collc {
namespace {

/// Every buffer of one call, as floats (DType::F32) or 16-bit words, built from float values.
struct Buffers {
  DType type;
  std::vector<std::vector<char>> inputs;
  std::vector<char> residual, weight;
  std::vector<const void*> pointers;

  Buffers(DType type, const std::vector<std::vector<float>>& in, const std::vector<float>& res,
          const std::vector<float>& w)
      : type(type) {
    for (const auto& values : in)
      inputs.push_back(store(values));
    residual = store(res);
    weight = store(w);
    for (const auto& buffer : inputs)
      pointers.push_back(buffer.data());
  }
  std::vector<char> store(const std::vector<float>& values) const {
    std::vector<char> bytes(values.size() * sizeOf(type));
    for (size_t i = 0; i < values.size(); ++i)
      storeElement(type, bytes.data(), i, values[i]);
    return bytes;
  }
  AddRmsNormCall call(int64_t rowLength, double eps) const {
    AddRmsNormCall c;
    c.type = type;
    c.count = residual.size() / sizeOf(type);
    c.rowLength = rowLength;
    c.eps = eps;
    c.inputs = pointers;
    c.residual = residual.data();
    c.weight = weight.data();
    return c;
  }
};

// Row 0: y = (1, 2, 2, 4), mean(y^2) = 25/4, so with eps 0 out = y / 2.5 * w.
// Row 1: y = (1, 1, 1, 1), mean(y^2) = 1; eps 3 would make the scale 1/2 (checked below).
const std::vector<std::vector<float>> kInputs = {{0.5f, 1, 1.5f, 3, 1, 0, 0.25f, 0.5f},
                                                 {0.25f, 0.5f, 0.5f, 0.5f, -1, 0.5f, 0.5f, 0}};
const std::vector<float> kResidual = {0.25f, 0.5f, 0, 0.5f, 1, 0.5f, 0.25f, 0.5f};
const std::vector<float> kWeight = {1, 2, -1, 0.5f};

TEST(RmsNormReference, HandComputedRows) {
  Buffers buffers(DType::F32, kInputs, kResidual, kWeight);
  AddRmsNormReference ref = referenceAddRmsNorm(buffers.call(4, 0.0));
  const std::vector<double> y = {1, 2, 2, 4, 1, 1, 1, 1};
  const std::vector<double> out = {0.4, 1.6, -0.8, 0.8, 1, 2, -1, 0.5};
  ASSERT_EQ(ref.sum.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_DOUBLE_EQ(ref.sum[i], y[i]) << i;
    EXPECT_NEAR(ref.normalized[i], out[i], 1e-15) << i;
    EXPECT_GT(ref.sumTolerance[i], 0) << i;
    EXPECT_LT(ref.sumTolerance[i], 1e-4) << i; // f32: a few 1e-6 of |inputs| + |residual|
  }
}

TEST(RmsNormReference, EpsilonEntersTheMeanSquare) {
  Buffers buffers(DType::F32, kInputs, kResidual, kWeight);
  AddRmsNormReference ref = referenceAddRmsNorm(buffers.call(4, 3.0));
  // Row 1: 1 / sqrt(1 + 3) = 0.5; row 0: 1 / sqrt(6.25 + 3).
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(ref.normalized[4 + i], 0.5 * kWeight[i], 1e-15);
    EXPECT_NEAR(ref.normalized[i], ref.sum[i] / std::sqrt(9.25) * kWeight[i], 1e-15);
  }
}

TEST(RmsNormReference, RowLengthSplitsTheNorm) {
  // The same eight elements as one row of 8: mean(y^2) = (25 + 4) / 8.
  Buffers buffers(DType::F32, kInputs, kResidual, {1, 1, 1, 1, 1, 1, 1, 1});
  AddRmsNormReference ref = referenceAddRmsNorm(buffers.call(8, 0.0));
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(ref.normalized[i], ref.sum[i] / std::sqrt(29.0 / 8), 1e-15);
}

TEST(RmsNormReference, ExactOutputsPassInEveryType) {
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    Buffers buffers(type, kInputs, kResidual, kWeight);
    AddRmsNormCall call = buffers.call(4, 0.0);
    // Every y is exact in every type; out is rounded once.
    std::vector<char> residualOut = buffers.store({1, 2, 2, 4, 1, 1, 1, 1});
    std::vector<char> out = buffers.store({0.4f, 1.6f, -0.8f, 0.8f, 1, 2, -1, 0.5f});
    Comparison c = compareAddRmsNorm(call, residualOut.data(), out.data(), "rank 0");
    EXPECT_TRUE(c.ok()) << name(type) << "\n" << c.firstMismatches;
  }
}

TEST(RmsNormReference, WrongElementsAreNamed) {
  Buffers buffers(DType::BF16, kInputs, kResidual, kWeight);
  AddRmsNormCall call = buffers.call(4, 0.0);
  std::vector<char> residualOut = buffers.store({1, 2, 2, 4, 1, 1, 1.125f, 1});
  std::vector<char> out = buffers.store({0.4f, 1.6f, -0.8f, 0.8f, 1, 2.25f, -1, 0.5f});
  Comparison c = compareAddRmsNorm(call, residualOut.data(), out.data(), "rank 1");
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_NE(c.firstMismatches.find("rank 1 residual_out[6]: got 1.125"), std::string::npos)
      << c.firstMismatches;
  EXPECT_NE(c.firstMismatches.find("rank 1 out[5]: got 2.25"), std::string::npos)
      << c.firstMismatches;
}

TEST(RmsNormReference, PoisonedOutputsFail) {
  Buffers buffers(DType::F16, kInputs, kResidual, kWeight);
  AddRmsNormCall call = buffers.call(4, 1e-6);
  std::vector<char> poison(8 * 2, char(0xFF)); // NaN in every element, as the harness fills
  Comparison c = compareAddRmsNorm(call, poison.data(), poison.data(), "r", 100);
  EXPECT_EQ(c.mismatches, 16u);
}

/// What the generated kernel does (golden allreduce_rmsnorm_*.check): add in float, round y to
/// the type and store it, then normalise the stored row in float and round once more.
void kernelModel(const Buffers& buffers, int64_t row, float eps, std::vector<char>& residualOut,
                 std::vector<char>& out, bool forgetWeight = false) {
  const DType t = buffers.type;
  const uint64_t n = buffers.residual.size() / sizeOf(t);
  residualOut.assign(n * sizeOf(t), 0);
  out.assign(n * sizeOf(t), 0);
  for (uint64_t i = 0; i < n; ++i) {
    float y = float(loadElement(t, buffers.pointers[0], i));
    for (size_t r = 1; r < buffers.pointers.size(); ++r)
      y += float(loadElement(t, buffers.pointers[r], i));
    y += float(loadElement(t, buffers.residual.data(), i));
    storeElement(t, residualOut.data(), i, y);
  }
  for (uint64_t begin = 0; begin < n; begin += uint64_t(row)) {
    float sumSquares = 0;
    for (uint64_t i = begin; i < begin + uint64_t(row); ++i) {
      const float y = float(loadElement(t, residualOut.data(), i));
      sumSquares += y * y;
    }
    const float scale = 1.0f / std::sqrt(sumSquares / float(row) + eps);
    for (uint64_t i = begin; i < begin + uint64_t(row); ++i) {
      const float w = forgetWeight ? 1.0f : float(loadElement(t, buffers.weight.data(), i - begin));
      storeElement(t, out.data(), i, float(loadElement(t, residualOut.data(), i)) * scale * w);
    }
  }
}

Buffers randomBuffers(DType type, int nranks, uint64_t n, int64_t row, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto random = [&](uint64_t count) {
    std::vector<float> values(count);
    fillRandom(DType::F32, values.data(), count, rng);
    return values;
  };
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < nranks; ++r)
    inputs.push_back(random(n));
  return Buffers(type, inputs, random(n), random(uint64_t(row)));
}

TEST(RmsNormReference, KernelArithmeticPassesInEveryType) {
  for (DType type : {DType::F32, DType::F16, DType::BF16})
    for (int nranks : {2, 8})
      for (int64_t row : {4096, 8192}) {
        Buffers buffers = randomBuffers(type, nranks, uint64_t(row) * 3, row, 11 + nranks);
        std::vector<char> residualOut, out;
        kernelModel(buffers, row, 1e-6f, residualOut, out);
        Comparison c =
            compareAddRmsNorm(buffers.call(row, 1e-6), residualOut.data(), out.data(), "model");
        EXPECT_TRUE(c.ok()) << name(type) << " x" << nranks << " row " << row << "\n"
                            << c.firstMismatches;
      }
}

TEST(RmsNormReference, TolerancesAreTightEnoughToCatchAMissingWeight) {
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    Buffers buffers = randomBuffers(type, 2, 4096 * 2, 4096, 5);
    std::vector<char> residualOut, out;
    kernelModel(buffers, 4096, 1e-6f, residualOut, out, /*forgetWeight=*/true);
    Comparison c =
        compareAddRmsNorm(buffers.call(4096, 1e-6), residualOut.data(), out.data(), "model");
    EXPECT_GT(c.mismatches, 4096u) << name(type); // nearly every out element, no residual_out
  }
}

TEST(RmsNormReference, OutToleranceIsAFewUnitsOfTheType) {
  // The tolerance must not swallow a wrong rounding of many ulps: summed over a row it stays
  // within a handful of the type's unit roundoffs of the summed |out| (element by element it is
  // wider where inputs cancel, as the AllReduce sum's is).
  for (DType type : {DType::F16, DType::BF16}) {
    Buffers buffers = randomBuffers(type, 2, 4096, 4096, 9);
    AddRmsNormReference ref = referenceAddRmsNorm(buffers.call(4096, 1e-6));
    double tolerance = 0, magnitude = 0;
    for (size_t i = 0; i < ref.normalized.size(); ++i) {
      tolerance += ref.normalizedTolerance[i];
      magnitude += std::fabs(ref.normalized[i]);
    }
    const double relative = tolerance / magnitude;
    const double unit = type == DType::F16 ? 0x1p-11 : 0x1p-8;
    EXPECT_LT(relative, 16 * unit) << name(type);
  }
}

} // namespace
} // namespace collc
