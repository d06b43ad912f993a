// Kept spec runs (verify/Simulation.h, SpecRuns): a lowered program's proof that finds the spec's
// run of a configuration kept, rather than making it, reaches the same verdict, with the same
// work and the same diagnostics, as one that makes every run itself.
#include "compiler/Compile.h"
#include "compiler/Lower.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/verify/Simulation.h"
#include "dsl/Parser.h"

#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>

namespace collc {
namespace {

constexpr int kRanks = 4;

struct Verdict {
  bool proved = false;
  int64_t work = 0;
  std::vector<std::tuple<bool, std::string>> aliases; // (allowed, why) of each pair
  bool together = false;
  std::string diagnostics;
};

/// The proof of `lowered` and of its aliases, with `kept` (or making every run when null).
Verdict prove(const LoweredVariant& variant, const VerifyResult& proof, DType dtype,
              llvm::SourceMgr& sources, proof::SpecRuns* kept) {
  Verdict verdict;
  llvm::raw_string_ostream out(verdict.diagnostics);
  Diagnostics diags(sources, out);
  verdict.proved = verifyLowered(variant.spec, variant.program, kRanks, dtype, diags,
                                 kDefaultVerifyWorkLimit, &verdict.work, kept);
  const LoweredAliases aliases =
      proveLoweredAliases(variant.spec, proof, variant.program, kRanks, dtype, diags,
                          kDefaultVerifyWorkLimit, &verdict.work, kept);
  for (const AliasVerdict& pair : aliases.pairs)
    verdict.aliases.push_back({pair.allowed, pair.why});
  verdict.together = aliases.together;
  out.flush();
  return verdict;
}

// A kept run's record (Arith::fresh, Arith::adopt): comparisons made on a fresh Arith and adopted
// leave the threshold and limits they leave when made on the run's own.
TEST(SpecRuns, AdoptedComparisonsRecordWhatTheyRecordWhenMadeHere) {
  using execute::Affine;
  using execute::Arith;
  struct Case {
    Arith own;
    Affine a, b, c; // c: one the residue decides, where there is one
  };
  const Case cases[] = {
      {Arith(true), {3, -40}, {1, 5}, {-2, 90}},
      {Arith::from(2), {3, -40}, {1, 5}, {-2, 90}},
      {Arith::from(30), {3, -40}, {1, 5}, {-2, 90}},
      {Arith::residues(4, 95), {3, -40, 1}, {1, 5, -2}, {0, 30, -1}},
  };
  const Affine zero = Affine::constant(0);
  for (const Case& each : cases) {
    Arith here = each.own, apart = each.own.fresh();
    (void)here.less(each.a, each.b);
    (void)apart.less(each.a, each.b);
    (void)apart.compare(each.c, zero);
    (void)apart.negative(Arith::sub(each.b, each.a));
    here.adopt(apart.threshold(), apart.limit(), apart.residueLimit());
    Arith direct = each.own;
    (void)direct.less(each.a, each.b);
    (void)direct.less(each.a, each.b);
    (void)direct.compare(each.c, zero);
    (void)direct.negative(Arith::sub(each.b, each.a));
    EXPECT_EQ(here.threshold(), direct.threshold());
    EXPECT_EQ(here.limit(), direct.limit());
    EXPECT_EQ(here.residueLimit(), direct.residueLimit());
    EXPECT_EQ(apart.start(), each.own.start());
    EXPECT_EQ(apart.residueStart(), each.own.residueStart());
    EXPECT_TRUE(direct.threshold() != each.own.threshold() || direct.limit() != each.own.limit() ||
                direct.residueLimit() != each.own.residueLimit())
        << "the comparisons record something";
  }
  // Over residues the record holds both: a threshold in q and a limit in s.
  Arith residues = cases[3].own;
  (void)residues.less(cases[3].a, cases[3].b);
  (void)residues.compare(cases[3].c, zero);
  EXPECT_GT(residues.threshold(), 0);
  EXPECT_EQ(residues.residueLimit(), 29); // 30 - s > 0 up to s = 29
}

TEST(SpecRuns, KeptRunsGiveEveryLoweredProofItsOwnVerdictWorkAndDiagnostics) {
  for (const char* name : {"allreduce_twoshot", "allreduce_rmsnorm", "alltoall_direct"}) {
    auto source = loadSpec(name);
    ASSERT_TRUE(bool(source)) << toString(source.takeError());
    llvm::SourceMgr sources;
    std::string text;
    llvm::raw_string_ostream out(text);
    Diagnostics diags(sources, out);
    auto ast = parseSpecText(diags, source->text, source->bufferName);
    ASSERT_TRUE(ast) << out.str();
    auto spec = analyze(*ast, diags);
    ASSERT_TRUE(spec) << out.str();
    const VerifyResult proof =
        proofForRanks(verify(*spec, diags, kDefaultVerifyWorkLimit, kRanks), kRanks);
    ASSERT_TRUE(proof.ok) << out.str();
    proof::SpecRuns kept;
    int allowedSomewhere = 0, refusedSomewhere = 0;
    // Strategies with and without packets (which split n's classes alike or not) and both
    // element sizes: later programs find runs kept by earlier ones.
    for (SyncKind sync : {SyncKind::Barrier, SyncKind::LL, SyncKind::Sentinel})
      for (DType dtype : {DType::F32, DType::F16}) {
        ir::Program program = *spec;
        program.sync = sync;
        LowerOptions options;
        options.nranks = kRanks;
        options.dtype = dtype;
        options.verifyLowered = false;
        if (!spec->rowLengthName.empty())
          options.rowLength = spec->defaultRowLength > 0 ? spec->defaultRowLength : 4096;
        auto variant = lower(program, proof, options, diags);
        ASSERT_TRUE(variant) << name << " " << out.str();
        const std::string where = std::string(name) + " " + std::string(collc::name(sync)) + " " +
                                  std::string(collc::name(dtype));
        const Verdict fresh = prove(*variant, proof, dtype, sources, nullptr);
        const Verdict reusing = prove(*variant, proof, dtype, sources, &kept);
        EXPECT_TRUE(fresh.proved) << where << fresh.diagnostics;
        EXPECT_EQ(reusing.proved, fresh.proved) << where;
        EXPECT_EQ(reusing.work, fresh.work) << where;
        EXPECT_EQ(reusing.aliases, fresh.aliases) << where;
        EXPECT_EQ(reusing.together, fresh.together) << where;
        EXPECT_EQ(reusing.diagnostics, fresh.diagnostics) << where;
        for (const auto& [allowed, why] : fresh.aliases)
          (allowed ? allowedSomewhere : refusedSomewhere) += 1;
      }
    EXPECT_GT(kept.kept(), 0u) << name;
    EXPECT_GT(kept.reused(), 0) << name << ": no lowered proof found a kept run";
    // A refused pair's proof failed against kept runs and said why as without them.
    EXPECT_GT(allowedSomewhere, 0) << name;
    if (std::string(name) == "allreduce_rmsnorm") {
      EXPECT_GT(refusedSomewhere, 0) << "ll does not allow rmsnorm's out in place";
    }
  }
}

} // namespace
} // namespace collc
