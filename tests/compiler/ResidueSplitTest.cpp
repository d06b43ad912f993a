// The proof over every n where a division is not exact in q (execute/Affine.h, SplitQ): a block of
// a chunk(a * n + b) buffer is chunk / nranks, whose part in q is 8a per q once the period is
// 8 * nranks (the chunk's own split of the first period, 1), which 3, 5, 6 or 7 ranks need not
// divide. The verifier then splits the residue class;
// these tests check its verdict against runs with numbers for every n up to past the split period.
#include "compiler/ExpandSteps.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/verify/Simulation.h"
#include "dsl/Parser.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

struct Parsed {
  llvm::SourceMgr sources;
  std::string diagnostics;
  llvm::raw_string_ostream out{diagnostics};
  Diagnostics diags{sources, out};
  std::unique_ptr<ir::Program> program;
};

std::unique_ptr<Parsed> parse(const std::string& text) {
  auto parsed = std::make_unique<Parsed>();
  auto ast = parseSpecText(parsed->diags, text, "spec.coll");
  if (ast)
    parsed->program = analyze(*ast, parsed->diags);
  return parsed;
}

/// The first n in 1..last for which a run with numbers breaks a rule at `nranks` ranks, or 0.
int64_t firstBrokenCount(const ir::Program& program, int nranks, int64_t last) {
  llvm::SourceMgr sources;
  std::string ignored;
  llvm::raw_string_ostream out(ignored);
  Diagnostics diags(sources, out);
  auto steps = expandRepeatedSteps(program, nranks, diags);
  EXPECT_TRUE(steps);
  for (int64_t n = 1; n <= last; ++n) {
    proof::RunConfig config;
    config.nranks = nranks;
    config.count = proof::Affine::constant(n);
    proof::Arith arith(/*symbolic=*/false);
    try {
      proof::simulate(program, *steps, config, arith, nullptr);
    } catch (const proof::RunFailed&) {
      return n;
    }
  }
  return 0;
}

// Peers' inputs in blocks of a chunk(50 * n) scratch: each block is at least n long for up to 7
// ranks (50 / nranks^2 >= 1). Correct at every rank count, and proved.
const char* const kBlocksOfAChunk = R"(collective c kind allreduce
  ranks 2..7
  buffers in: T[n], out: T[n]
  scratch inbox: T[chunk(50 * n)]
{
  step push { for p in peers { put in -> p.inbox.block(rank) } }
  step reduce {
    wait push
    out = in
    for q in peers { out = reduce(out, inbox.block(q)) }
  }
})";

TEST(ResidueSplit, BlocksOfAChunkAreProvedAtEveryRankCount) {
  auto parsed = parse(kBlocksOfAChunk);
  ASSERT_TRUE(parsed->program) << parsed->diagnostics;
  VerifyResult proof = verify(*parsed->program, parsed->diags);
  EXPECT_TRUE(proof.ok) << parsed->out.str();
  for (int nranks = 2; nranks <= 7; ++nranks)
    EXPECT_EQ(firstBrokenCount(*parsed->program, nranks, 8 * nranks * nranks * 3 + 5), 0)
        << nranks << " ranks";
}

// The same blocks read back as chunks of the chunk: [q * chunk(C), ...) is block q only for some
// C = chunk(16 * n + 49). At 3 ranks n = 2 is the first count that shows it, but 1, 9 and 77, the
// counts run first, do not: the residue classes do, once split (the class that holds n = 12).
// Refused with the read and a count, where the verifier once gave up with wrong arithmetic.
TEST(ResidueSplit, ChunksReadAsBlocksAreRefusedWithTheCount) {
  auto parsed = parse(R"(collective c kind allreduce
  ranks 3..3
  buffers in: T[n], out: T[n]
  scratch inbox: T[chunk(16 * n + 49)]
{
  step push { for p in peers { put in -> p.inbox.block(rank) } }
  step reduce {
    wait push
    out = reduce(in, inbox.chunk((rank + 1) % nranks), inbox.chunk((rank + 2) % nranks))
  }
})");
  ASSERT_TRUE(parsed->program) << parsed->diagnostics;
  EXPECT_EQ(firstBrokenCount(*parsed->program, 3, 200), 2);
  VerifyResult proof = verify(*parsed->program, parsed->diags);
  EXPECT_FALSE(proof.ok);
  EXPECT_NE(parsed->out.str().find("before anything writes it (nranks=3, n=20)"), std::string::npos)
      << parsed->out.str();
  EXPECT_EQ(parsed->out.str().find("cannot verify"), std::string::npos) << parsed->out.str();
}

} // namespace
} // namespace collc
