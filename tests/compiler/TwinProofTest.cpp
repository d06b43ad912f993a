// Lowered programs that share a proof (loweredProofText): `collc check` proves one program of each
// text at a rank count and takes that proof for the others of the same text. These tests hold the
// premise on the stdlib's programs: where a strategy's f32 and f16 programs read alike to the
// proof, proving each gives the same verdict after the same work, in one call and across calls;
// and a program that holds LL packets never reads alike across element sizes.
#include "compiler/Compile.h"
#include "compiler/Lower.h"
#include "compiler/Verifier.h"
#include "compiler/verify/AcrossCalls.h"
#include "tests/StdlibApplicability.h"
#include "tests/StdlibStrategies.h"

#include <gtest/gtest.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <sstream>

namespace collc {
namespace {

constexpr int kRankCounts[] = {2, 3, 5};

/// What the proofs of one lowered program found, and the work the one-call proof took.
struct Proofs {
  bool oneCall = false, acrossCalls = false;
  int64_t work = 0;
  AcrossCallsStats across;
};

Proofs prove(const VariantPrograms& programs, int nranks, DType dtype) {
  llvm::SourceMgr sources;
  std::string text;
  llvm::raw_string_ostream out(text);
  Diagnostics diags(sources, out);
  Proofs proofs;
  proofs.oneCall = verifyLowered(*programs.spec, *programs.lowered, nranks, dtype, diags,
                                 kDefaultVerifyWorkLimit, &proofs.work);
  proofs.acrossCalls = proveAcrossCalls(*programs.lowered, nranks, rotationOf(*programs.lowered),
                                        diags, &proofs.across);
  return proofs;
}

std::optional<VariantPrograms> lowered(const SpecSource& source, SyncKind sync, int nranks,
                                       DType dtype) {
  CompileOptions options;
  options.sync = sync;
  options.nranks = nranks;
  options.dtype = dtype;
  options.experimentalLL128 = true;
  std::ostringstream diagnostics;
  auto programs = lowerVariantPrograms(source, options, diagnostics);
  if (!programs) {
    consumeError(programs.takeError());
    return std::nullopt;
  }
  return std::move(*programs);
}

TEST(TwinProof, ProgramsThatReadAlikeProveAlike) {
  int twins = 0, apart = 0;
  for (const tests::StdlibSpecFacts& spec : tests::kStdlibSpecs) {
    auto source = loadSpec(spec.name);
    ASSERT_TRUE(bool(source)) << toString(source.takeError());
    for (SyncKind sync : tests::kImplementedStrategies)
      for (int nranks : kRankCounts) {
        auto f32 = lowered(*source, sync, nranks, DType::F32);
        auto f16 = lowered(*source, sync, nranks, DType::F16);
        if (!f32 || !f16)
          continue; // the strategy refuses the spec (its tests say so)
        const std::string where = std::string(spec.name) + ", " + std::string(name(sync)) + ", " +
                                  std::to_string(nranks) + " ranks";
        const bool alike = loweredProofText(*f32->lowered, DType::F32) ==
                           loweredProofText(*f16->lowered, DType::F16);
        if (f32->lowered->uses(ir::Storage::Packets)) {
          EXPECT_FALSE(alike) << where << ": packets of 2 and 4 elements read alike";
        }
        if (!alike) {
          ++apart;
          continue;
        }
        ++twins;
        const Proofs a = prove(*f32, nranks, DType::F32), b = prove(*f16, nranks, DType::F16);
        EXPECT_TRUE(a.oneCall && a.acrossCalls) << where;
        EXPECT_EQ(a.oneCall, b.oneCall) << where;
        EXPECT_EQ(a.acrossCalls, b.acrossCalls) << where;
        EXPECT_EQ(a.work, b.work) << where;
        EXPECT_EQ(a.across.configurations, b.across.configurations) << where;
        EXPECT_EQ(a.across.callsRun, b.across.callsRun) << where;
      }
  }
  // Barrier, sentinel and ll128_atomic programs of most specs read alike; ll's never do.
  EXPECT_GT(twins, 40);
  EXPECT_GT(apart, 10);
}

// The vector width does differ between the programs the test above compares: what it shows is
// that the proof reads past it, not that the two programs are the same.
TEST(TwinProof, TwinsDifferInTheirVectorWidth) {
  auto source = loadSpec("allreduce_twoshot");
  ASSERT_TRUE(bool(source)) << toString(source.takeError());
  auto f32 = lowered(*source, SyncKind::Barrier, 3, DType::F32);
  auto f16 = lowered(*source, SyncKind::Barrier, 3, DType::F16);
  ASSERT_TRUE(f32 && f16);
  auto printed = [](const ir::Program& program) {
    std::string text;
    llvm::raw_string_ostream out(text);
    ir::print(program, out);
    return out.str();
  };
  EXPECT_NE(printed(*f32->lowered), printed(*f16->lowered));
  EXPECT_NE(printed(*f32->lowered).find("vector 4 unroll 1"), std::string::npos);
  EXPECT_NE(printed(*f16->lowered).find("vector 8 unroll 1"), std::string::npos);
  EXPECT_EQ(loweredProofText(*f32->lowered, DType::F32),
            loweredProofText(*f16->lowered, DType::F16));
}

} // namespace
} // namespace collc
