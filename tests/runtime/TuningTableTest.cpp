// The tuning table without a GPU: it round-trips through its text, a person's edits (wildcards,
// `-` for the spec's own knob, notes, a moved winner mark) parse, and every malformed line is an
// error that names the file and the line.
#include "runtime/TuningTable.h"

#include <cmath>
#include <cstdlib>
#include <gtest/gtest.h>
#include <string>

namespace collc {
namespace {

const char* const kTable = R"(# collc tuning table
# measured on a test machine
# gpu        ranks  topology    collective  dtype  op   from  to   bytes  spec               sync      blocks  threads  vector  unroll  us     best
NVIDIA_H200  2      nvlink-p2p  allreduce   bf16   sum  0     2K   1K     allreduce_oneshot  sentinel  8       512      16      1       2.280  *
NVIDIA_H200  2      nvlink-p2p  allreduce   bf16   sum  0     2K   1K     allreduce_oneshot  ll        8       512      16      1       2.400  -
NVIDIA_H200  2      nvlink-p2p  allreduce   bf16   sum  2K    inf  64M    allreduce_twoshot  barrier   32      512      16      1       500.5  *
NVIDIA_H200  2      nvlink-p2p  allreduce   bf16   sum  2K    inf  64M    allreduce_twoshot  ll128_atomic  16  512      16      1       inf    -  # FAILED: watchdog
*            *      *           allreduce   *      *    0     inf  1K     allreduce_oneshot  -         -       -        -       -       3.0    *  # a rule by hand
)";

std::string errorOf(std::string_view text) {
  auto table = parseTuningTable(text, "t.tsv");
  if (table)
    return "";
  return toString(table.takeError());
}

std::string rowWith(const std::string& replaceWhat, const std::string& with) {
  std::string row = "NVIDIA_H200 2 nvlink-p2p allreduce bf16 sum 0 2K 1K allreduce_oneshot "
                    "sentinel 8 512 16 1 2.28 *\n";
  size_t at = row.find(replaceWhat);
  EXPECT_NE(at, std::string::npos) << replaceWhat;
  return row.replace(at, replaceWhat.size(), with);
}

TEST(TuningTable, ParsesRowsWildcardsNotesAndTheHeader) {
  auto table = parseTuningTable(kTable, "t.tsv");
  ASSERT_TRUE(bool(table)) << toString(table.takeError());
  ASSERT_EQ(table->rows.size(), 5u);
  EXPECT_EQ(table->header.size(), 2u); // the column names are not part of the header
  const TuningRow& first = table->rows[0];
  EXPECT_EQ(first.key.gpu, "NVIDIA_H200");
  EXPECT_EQ(first.key.nranks, 2);
  EXPECT_EQ(first.key.dtype, DType::BF16);
  EXPECT_EQ(first.fromBytes, 0u);
  EXPECT_EQ(first.toBytes, 2048u);
  EXPECT_EQ(first.bytes, 1024u);
  EXPECT_EQ(first.variant.spec, "allreduce_oneshot");
  EXPECT_EQ(first.variant.sync, SyncKind::Sentinel);
  EXPECT_EQ(first.variant.blocks, 8);
  EXPECT_DOUBLE_EQ(first.us, 2.28);
  EXPECT_TRUE(first.best);
  EXPECT_EQ(first.line, 4);
  EXPECT_FALSE(table->rows[1].best);
  EXPECT_EQ(table->rows[2].toBytes, kNoUpperBound);
  EXPECT_TRUE(std::isinf(table->rows[3].us));
  EXPECT_EQ(table->rows[3].note, "FAILED: watchdog");
  const TuningRow& byHand = table->rows[4];
  EXPECT_EQ(byHand.key.specificity(), 0);
  EXPECT_FALSE(byHand.key.nranks);
  EXPECT_FALSE(byHand.variant.sync);
  EXPECT_FALSE(byHand.variant.blocks);
  EXPECT_EQ(byHand.note, "a rule by hand");
}

TEST(TuningTable, WritesWhatItReads) {
  auto table = parseTuningTable(kTable, "t.tsv");
  ASSERT_TRUE(bool(table)) << toString(table.takeError());
  std::string written = tuningTableText(*table);
  EXPECT_NE(written.find("# collc tuning table\n"), std::string::npos) << written;
  EXPECT_NE(written.find("# gpu "), std::string::npos) << written;
  EXPECT_NE(written.find("# FAILED: watchdog"), std::string::npos) << written;
  auto again = parseTuningTable(written, "again.tsv");
  ASSERT_TRUE(bool(again)) << toString(again.takeError()) << "\n" << written;
  ASSERT_EQ(again->rows.size(), table->rows.size());
  EXPECT_EQ(again->header, table->header);
  for (size_t i = 0; i < table->rows.size(); ++i) {
    const TuningRow &a = table->rows[i], &b = again->rows[i];
    EXPECT_TRUE(a.key.sameAs(b.key)) << i;
    EXPECT_EQ(a.variant, b.variant) << i;
    EXPECT_TRUE(a.sameRange(b)) << i;
    EXPECT_EQ(a.bytes, b.bytes) << i;
    EXPECT_EQ(a.best, b.best) << i;
    EXPECT_EQ(a.note, b.note) << i;
    if (std::isfinite(a.us))
      EXPECT_NEAR(a.us, b.us, 1e-3) << i;
    else
      EXPECT_TRUE(std::isinf(b.us)) << i;
  }
}

TEST(TuningTable, TabsAndBlankLinesAreFine) {
  auto table = parseTuningTable("\n# c\n\nGPU\t2\tnvlink-p2p\tallreduce\tf32\tmax\t0\t4K\t4K\t"
                                "allreduce_twoshot\tbarrier\t16\t256\t8\t2\t7.5\t*\r\n\n",
                                "t.tsv");
  ASSERT_TRUE(bool(table)) << toString(table.takeError());
  ASSERT_EQ(table->rows.size(), 1u);
  EXPECT_EQ(table->rows[0].key.op, ReduceOp::Max);
  EXPECT_EQ(table->rows[0].variant.unroll, 2);
  EXPECT_EQ(table->rows[0].line, 4);
}

// whole_stores came after tables were committed: a row of 17 columns is one written before it
// and leaves the knob to the spec; a row of 18 sets it (0 or 1), and a write keeps it.
TEST(TuningTable, WholeStoresColumnAndTablesWrittenBeforeIt) {
  auto older = parseTuningTable(rowWith("", ""), "t.tsv");
  ASSERT_TRUE(bool(older)) << toString(older.takeError());
  EXPECT_FALSE(older->rows[0].variant.wholeStores.has_value());
  EXPECT_EQ(older->rows[0].variant.text(), "allreduce_oneshot/sentinel 8x512 v16 u1");

  auto newer = parseTuningTable(rowWith(" 1 2.28", " 1 1 2.28"), "t.tsv");
  ASSERT_TRUE(bool(newer)) << toString(newer.takeError());
  EXPECT_EQ(newer->rows[0].variant.wholeStores, 1);
  EXPECT_EQ(newer->rows[0].variant.text(), "allreduce_oneshot/sentinel 8x512 v16 u1 w1");
  EXPECT_EQ(newer->rows[0].us, 2.28);
  EXPECT_TRUE(newer->rows[0].best);
  std::string written = tuningTableText(*newer);
  auto again = parseTuningTable(written, "t.tsv");
  ASSERT_TRUE(bool(again)) << toString(again.takeError());
  EXPECT_EQ(again->rows[0].variant, newer->rows[0].variant);
  EXPECT_NE(again->rows[0].variant, older->rows[0].variant) << "set to 1 is not the spec's own";

  auto off = parseTuningTable(rowWith(" 1 2.28", " 1 0 2.28"), "t.tsv");
  ASSERT_TRUE(bool(off)) << toString(off.takeError());
  EXPECT_EQ(off->rows[0].variant.wholeStores, 0);
  EXPECT_EQ(off->rows[0].variant.text(), "allreduce_oneshot/sentinel 8x512 v16 u1");
  EXPECT_NE(errorOf(rowWith(" 1 2.28", " 1 2 2.28")).find("column 'whole_stores' is '2'"),
            std::string::npos);
}

TEST(TuningTable, MalformedLinesNameFileAndLine) {
  EXPECT_EQ(errorOf("# only a comment\n"), "");
  std::string wrongCount = errorOf("\nNVIDIA_H200 2 nvlink-p2p allreduce\n");
  EXPECT_NE(wrongCount.find("t.tsv:2: error: expected 18 columns"), std::string::npos)
      << wrongCount;
  EXPECT_NE(wrongCount.find("found 4"), std::string::npos) << wrongCount;
  struct Case {
    std::string what, with, message;
  };
  const Case cases[] = {
      {"bf16", "bf17", "column 'dtype' is 'bf17'"},
      {"sum", "avg", "column 'op' is 'avg'"},
      {"allreduce ", "allscatter ", "column 'collective' is 'allscatter'"},
      {" 2 ", " two ", "column 'ranks' is 'two'"},
      {"0 2K", "4K 2K", "the range from 4K to 2K is empty"},
      {"0 2K", "0 2X", "column 'to' is '2X'"},
      {"0 2K", "x 2K", "column 'from' is 'x'"},
      {"sentinel", "fast", "column 'sync' is 'fast'"},
      {" 8 ", " 0 ", "column 'blocks' is '0'"},
      {" 512 ", " many ", "column 'threads' is 'many'"},
      {"2.28", "fast", "column 'us' is 'fast'"},
      {"2.28", "-1", "column 'us' is '-1'"},
      {"2.28 *", "2.28 yes", "column 'best' is 'yes'"},
      {"2.28 *", "inf *", "a row whose time is inf cannot be the winner"},
  };
  for (const Case& c : cases) {
    std::string error = errorOf("# header\n" + rowWith(c.what, c.with));
    EXPECT_NE(error.find("t.tsv:2: error: "), std::string::npos) << c.with << ": " << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.with << ": " << error;
  }
}

TEST(TuningTable, RangesOfOneKeyCoincideOrAreDisjoint) {
  std::string base = rowWith("2.28", "2.28");
  // The same range twice is fine (two variants measured there), with one winner.
  EXPECT_EQ(errorOf(base + rowWith("2.28 *", "2.40 -")), "");
  std::string twoWinners = errorOf(base + rowWith("sentinel", "ll"));
  EXPECT_NE(twoWinners.find("t.tsv:2: error: a second winner (*) for the range 0 to 2K; line 1 "
                            "is the first"),
            std::string::npos)
      << twoWinners;
  std::string overlap = errorOf(base + rowWith("0 2K", "1K 4K"));
  EXPECT_NE(overlap.find("t.tsv:2: error: the range 1K to 4K overlaps the range 0 to 2K of line 1"),
            std::string::npos)
      << overlap;
  // Another key may have any range.
  EXPECT_EQ(errorOf(base + rowWith("bf16 sum 0 2K", "f16 sum 1K 4K")), "");
  // Adjacent ranges do not overlap.
  EXPECT_EQ(errorOf(base + rowWith("0 2K 1K", "2K 4K 2K")), "");
}

TEST(TuningTable, ReadingAMissingFileSaysWhich) {
  auto table = readTuningTable("/nonexistent/collc/tuning.tsv");
  ASSERT_FALSE(bool(table));
  std::string error = toString(table.takeError());
  EXPECT_NE(error.find("cannot read the tuning table /nonexistent/collc/tuning.tsv"),
            std::string::npos)
      << error;
}

TEST(TuningTable, SizesReadAndWriteWithSuffixes) {
  EXPECT_EQ(formatTableBytes(0), "0");
  EXPECT_EQ(formatTableBytes(1536), "1536");
  EXPECT_EQ(formatTableBytes(2048), "2K");
  EXPECT_EQ(formatTableBytes(uint64_t(64) << 20), "64M");
  EXPECT_EQ(formatTableBytes(uint64_t(2) << 30), "2G");
  EXPECT_EQ(formatTableBytes(kNoUpperBound), "inf");
  EXPECT_EQ(parseTableBytes("64M"), uint64_t(64) << 20);
  EXPECT_EQ(parseTableBytes("4KiB"), 4096u);
  EXPECT_EQ(parseTableBytes("4k"), 4096u);
  EXPECT_EQ(parseTableBytes("100"), 100u);
  EXPECT_EQ(parseTableBytes("inf"), kNoUpperBound);
  EXPECT_FALSE(parseTableBytes("K"));
  EXPECT_FALSE(parseTableBytes("1T"));
  EXPECT_FALSE(parseTableBytes("-1"));
}

TEST(TuningTable, DefaultPathFollowsTheEnvironment) {
  std::string saved[3];
  const char* names[] = {"COLLC_TUNING_TABLE", "XDG_CONFIG_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (const char* v = std::getenv(names[i]))
      saved[i] = v;
  setenv("HOME", "/home/u", 1);
  unsetenv("COLLC_TUNING_TABLE");
  unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(defaultTuningTablePath(), "/home/u/.config/collc/tuning.tsv");
  setenv("XDG_CONFIG_HOME", "relative/ignored", 1);
  EXPECT_EQ(defaultTuningTablePath(), "/home/u/.config/collc/tuning.tsv");
  setenv("XDG_CONFIG_HOME", "/xdg", 1);
  EXPECT_EQ(defaultTuningTablePath(), "/xdg/collc/tuning.tsv");
  setenv("COLLC_TUNING_TABLE", "/etc/mine.tsv", 1);
  EXPECT_EQ(defaultTuningTablePath(), "/etc/mine.tsv");
  for (int i = 0; i < 3; ++i)
    if (saved[i].empty())
      unsetenv(names[i]);
    else
      setenv(names[i], saved[i].c_str(), 1);
}

TEST(TuningTable, GpuNamesBecomeOneColumn) {
  EXPECT_EQ(gpuModelKey("NVIDIA H200"), "NVIDIA_H200");
  EXPECT_EQ(gpuModelKey(" NVIDIA H100 80GB HBM3 "), "NVIDIA_H100_80GB_HBM3");
  EXPECT_EQ(gpuModelKey(""), "unknown");
}

TEST(TuningTable, KeysMatchWithWildcards) {
  TuningQuery query{"NVIDIA_H200", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16,
                    ReduceOp::Sum};
  TuningKey any;
  EXPECT_TRUE(matches(any, query));
  TuningKey exact{"NVIDIA_H200", 2, "nvlink-p2p", CollectiveKind::AllReduce, DType::BF16,
                  ReduceOp::Sum};
  EXPECT_TRUE(matches(exact, query));
  EXPECT_EQ(exact.specificity(), 5);
  TuningKey otherRanks = exact;
  otherRanks.nranks = 4;
  EXPECT_FALSE(matches(otherRanks, query));
  TuningKey otherGpu = exact;
  otherGpu.gpu = "NVIDIA_H100";
  EXPECT_FALSE(matches(otherGpu, query));
  TuningKey otherKind = any;
  otherKind.collective = CollectiveKind::AllGather;
  EXPECT_FALSE(matches(otherKind, query));
}

} // namespace
} // namespace collc
