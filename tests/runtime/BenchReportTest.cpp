// What `collc bench` reports, without a GPU: the sizes of a sweep, the arithmetic behind each
// column (a wrong busbw or ratio would mislead every comparison with NCCL), and the table, CSV
// and JSON written from synthetic rows.
#include "runtime/BenchReport.h"

#include "compiler/driver/Arguments.h"
#include "runtime/BenchResults.h"

#include <gtest/gtest.h>
#include <llvm/Support/JSON.h>
#include <sstream>

namespace collc {
namespace {

std::vector<uint64_t> KiB(std::initializer_list<uint64_t> sizes) {
  std::vector<uint64_t> bytes;
  for (uint64_t size : sizes)
    bytes.push_back(size << 10);
  return bytes;
}

TEST(BenchSizes, ParsesSuffixesAsPowersOf1024) {
  using driver::parseSize;
  EXPECT_EQ(parseSize("1K"), 1024u);
  EXPECT_EQ(parseSize("4k"), 4096u);
  EXPECT_EQ(parseSize("64M"), uint64_t(64) << 20);
  EXPECT_EQ(parseSize("1G"), uint64_t(1) << 30);
  EXPECT_EQ(parseSize("1536"), 1536u);
  EXPECT_FALSE(parseSize("1KB"));
  EXPECT_FALSE(parseSize("K"));
  EXPECT_FALSE(parseSize("-1K"));
  EXPECT_FALSE(parseSize(""));
}

TEST(BenchSizes, SweepRunsFromBeginToEndByFactor) {
  // The defaults, -b 1K -e 64M -f 2: 17 sizes; the GPU script's -f 4: the 9 sizes of the goals.
  std::vector<uint64_t> byTwo = sweepSizes(1 << 10, uint64_t(64) << 20, 2);
  ASSERT_EQ(byTwo.size(), 17u);
  EXPECT_EQ(byTwo.front(), 1024u);
  EXPECT_EQ(byTwo.back(), uint64_t(64) << 20);
  EXPECT_EQ(sweepSizes(1 << 10, uint64_t(64) << 20, 4),
            KiB({1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}));
  EXPECT_EQ(sweepSizes(1 << 10, uint64_t(64) << 20, 16), KiB({1, 16, 256, 4096, 65536}));
  // `end` is a bound, not a member: nccl-tests stops at the last size not above it.
  EXPECT_EQ(sweepSizes(1 << 10, 5 << 10, 2), KiB({1, 2, 4}));
  EXPECT_EQ(sweepSizes(1 << 10, 1 << 10, 2), KiB({1}));
}

TEST(BenchSizes, NoSweepFromBadArguments) {
  EXPECT_TRUE(sweepSizes(0, 1024, 2).empty());
  EXPECT_TRUE(sweepSizes(4096, 1024, 2).empty());
  EXPECT_TRUE(sweepSizes(1024, 4096, 1).empty());
  EXPECT_TRUE(sweepSizes(1024, 4096, 0).empty());
}

TEST(BenchSizes, SweepNearTheTopOfTheRangeDoesNotOverflow) {
  const uint64_t top = ~uint64_t(0);
  std::vector<uint64_t> sizes = sweepSizes(uint64_t(1) << 62, top, 4);
  EXPECT_EQ(sizes, std::vector<uint64_t>{uint64_t(1) << 62});
}

TEST(BenchSizes, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(formatBytes(1024), "1 KiB");
  EXPECT_EQ(formatBytes(64 << 10), "64 KiB");
  EXPECT_EQ(formatBytes(uint64_t(64) << 20), "64 MiB");
  EXPECT_EQ(formatBytes(uint64_t(2) << 30), "2 GiB");
  EXPECT_EQ(formatBytes(1536), "1536 B");
  EXPECT_EQ(formatBytes(0), "0 B");
}

TEST(BenchMath, BandwidthsAsNcclTestsDefineThem) {
  // 1 MiB in 10 us: 104.8576 GB/s (1e9 bytes per second).
  EXPECT_DOUBLE_EQ(algbwGBps(1 << 20, 10), 104.8576);
  // busbw = algbw * 2(n-1)/n: equal for 2 ranks, 1.5x for 4, 1.75x for 8.
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 2), 104.8576);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4), 104.8576 * 1.5);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 8), 104.8576 * 1.75);
  // Per kind, with bytes one rank's count: nccl-tests' factor times nranks where its size is the
  // whole gathered or scattered buffer.
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4, CollectiveKind::AllGather), 104.8576 * 3);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4, CollectiveKind::ReduceScatter), 104.8576 * 3);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4, CollectiveKind::AllToAll), 104.8576 * 3);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4, CollectiveKind::Broadcast), 104.8576);
  EXPECT_DOUBLE_EQ(busbwGBps(1 << 20, 10, 4, CollectiveKind::Reduce), 104.8576);
  EXPECT_EQ(algbwGBps(1024, 0), 0);
}

TEST(BenchMath, RatioIsTheBetterNcclOverCollc) {
  NcclPoint point{1024, BenchTiming::measured(6.0), BenchTiming::measured(4.0)};
  EXPECT_EQ(bestNcclUs(point), 4.0);
  EXPECT_DOUBLE_EQ(*vsBest(BenchTiming::measured(2.0), &point), 2.0); // collc twice as fast
  EXPECT_DOUBLE_EQ(*vsBest(BenchTiming::measured(8.0), &point), 0.5);
  // A wrong NCCL result is no baseline: the other one is.
  point.symmetric = BenchTiming::wrong("x");
  EXPECT_DOUBLE_EQ(*vsBest(BenchTiming::measured(3.0), &point), 2.0);
  point.plain = BenchTiming::failed("y");
  EXPECT_FALSE(bestNcclUs(point));
  EXPECT_FALSE(vsBest(BenchTiming::measured(3.0), &point));
  EXPECT_FALSE(vsBest(BenchTiming::measured(3.0), nullptr));
  NcclPoint good{1024, BenchTiming::measured(6.0), {}};
  EXPECT_FALSE(vsBest(BenchTiming::wrong("z"), &good)); // no time for a wrong collc result
}

TEST(BenchMath, WatchdogCostIsRelativeToTheUnboundedKernel) {
  BenchRow row;
  row.collc = BenchTiming::measured(1.02);
  row.unbounded = BenchTiming::measured(1.0);
  EXPECT_NEAR(*watchdogCost(row), 0.02, 1e-12);
  row.unbounded = {};
  EXPECT_FALSE(watchdogCost(row));
}

/// Two variants at 1 KiB and 2 KiB (bf16, 2 ranks), NCCL at both; one wrong and one failed.
BenchResults sample() {
  BenchResults results;
  results.header.collcVersion = "0.1.0";
  results.header.gitCommit = "abc1234";
  results.header.gpu = "NVIDIA H200";
  results.header.processes = "one process drives 2 GPUs";
  results.header.ncclVersion = "2.28.3";
  results.header.nvrtcVersion = "13.0";
  results.header.date = "2026-12-01 10:00:00 UTC";
  auto row = [](const char* spec, const char* sync, uint64_t bytes, BenchTiming timing) {
    BenchRow r;
    r.spec = spec;
    r.sync = sync;
    r.bytes = bytes;
    r.count = bytes / 2;
    r.collc = std::move(timing);
    return r;
  };
  results.rows = {row("allreduce_oneshot", "ll", 1024, BenchTiming::measured(2.0)),
                  row("allreduce_oneshot", "ll", 2048, BenchTiming::measured(2.5)),
                  row("allreduce_twoshot", "barrier", 1024, BenchTiming::measured(4.0)),
                  row("allreduce_twoshot", "barrier", 2048,
                      BenchTiming::wrong("call 0 rank 1 out: 3 of 1024 elements wrong\n"
                                         "  [0] got 1, want 2\n"))};
  results.nccl = {{1024, BenchTiming::measured(5.86), BenchTiming::measured(3.70)},
                  {2048, BenchTiming::measured(6.0),
                   BenchTiming::failed("ncclCommWindowRegister "
                                       "failed, badly")}};
  return results;
}

std::string render(void (*write)(llvm::raw_ostream&, const BenchResults&),
                   const BenchResults& results) {
  std::string text;
  llvm::raw_string_ostream out(text);
  write(out, results);
  return out.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;)
    out.push_back(word);
  return out;
}

TEST(BenchReport, BestPerSizeTakesTheFastestCorrectVariant) {
  BenchResults results = sample();
  auto best = bestPerSize(results);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].first, 1024u);
  EXPECT_EQ(best[0].second->variant(), "allreduce_oneshot/ll");
  EXPECT_EQ(best[1].second->variant(), "allreduce_oneshot/ll"); // twoshot's is wrong
  results.rows[1].collc = BenchTiming::failed("gone");
  EXPECT_EQ(bestPerSize(results)[1].second, nullptr);
  EXPECT_EQ(sample().failureCount(), 2); // the wrong twoshot row, the failed NCCL window
}

TEST(BenchReport, TableHasOneLinePerRowWithEveryColumn) {
  BenchResults results = sample();
  std::vector<std::string> table = lines(
      render([](llvm::raw_ostream& out, const BenchResults& r) { writeTable(out, r); }, results));
  EXPECT_EQ(words(table[0]),
            (std::vector<std::string>{"variant", "bytes", "count", "us/op", "algbw", "busbw",
                                      "nccl_us", "nccl_sym_us", "vs_best"}));
  // oneshot at 1 KiB: 2 us; algbw = busbw (2 ranks) = 1024 / 2e3 = 0.51 GB/s; vs the better
  // NCCL (3.70) = 1.85.
  EXPECT_EQ(words(table[1]),
            (std::vector<std::string>{"allreduce_oneshot/ll", "1024", "512", "2.00", "0.51", "0.51",
                                      "5.86", "3.70", "1.85"}));
  // A blank line between variants; a wrong result has no time, no bandwidth, no ratio; a
  // failed NCCL measurement says so.
  EXPECT_EQ(table[3], "");
  EXPECT_EQ(words(table[5]), (std::vector<std::string>{"allreduce_twoshot/barrier", "2048", "1024",
                                                       "WRONG", "-", "-", "6.00", "FAILED", "-"}));
}

TEST(BenchReport, TableWithoutVariantColumnStartsWithBytes) {
  // `collc run` prints this form, and scripts read bytes from the first column and us/op from
  // the third.
  BenchResults results = sample();
  results.rows.resize(1);
  std::vector<std::string> table = lines(render(
      [](llvm::raw_ostream& out, const BenchResults& r) { writeTable(out, r, false); }, results));
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(words(table[0])[0], "bytes");
  EXPECT_EQ(words(table[1])[0], "1024");
  EXPECT_EQ(words(table[1])[2], "2.00");
}

TEST(BenchReport, WatchdogCostColumnsWhenMeasured) {
  BenchResults results = sample();
  results.watchdogCost = true;
  results.rows[0].unbounded = BenchTiming::measured(1.6);
  std::vector<std::string> table = lines(
      render([](llvm::raw_ostream& out, const BenchResults& r) { writeTable(out, r); }, results));
  EXPECT_EQ(words(table[0]).back(), "wd_cost");
  std::vector<std::string> first = words(table[1]);
  EXPECT_EQ(first[first.size() - 2], "1.60");
  EXPECT_EQ(first.back(), "+25.0%"); // (2.0 - 1.6) / 1.6
}

TEST(BenchReport, WatchdogCostAtEachVariantsSmallestSize) {
  BenchResults results = sample();
  EXPECT_EQ(render([](llvm::raw_ostream& out, const BenchResults& r) { writeWatchdogCost(out, r); },
                   results),
            ""); // not measured: nothing to say
  results.watchdogCost = true;
  results.rows[0].unbounded = BenchTiming::measured(1.98); // +1.0%
  results.rows[1].unbounded = BenchTiming::measured(2.0);  // a larger size: not reported
  results.rows[2].unbounded = BenchTiming::measured(3.8);  // +5.3%
  std::vector<std::string> text = lines(render(
      [](llvm::raw_ostream& out, const BenchResults& r) { writeWatchdogCost(out, r); }, results));
  ASSERT_EQ(text.size(), 3u);
  EXPECT_EQ(words(text[1]),
            (std::vector<std::string>{"allreduce_oneshot/ll", "1", "KiB", "+1.0%", "PASS"}));
  EXPECT_EQ(words(text[2]),
            (std::vector<std::string>{"allreduce_twoshot/barrier", "1", "KiB", "+5.3%", "MISS"}));
}

TEST(BenchReport, BestPerSizeTableCountsWhereCollcIsFaster) {
  std::string text = render(writeBestPerSize, sample());
  EXPECT_NE(text.find("allreduce_oneshot/ll"), std::string::npos);
  // 1 KiB: 3.70 / 2.0 = 1.85; 2 KiB: 6.0 / 2.5 = 2.40 (the symmetric window failed).
  EXPECT_NE(text.find("1.85"), std::string::npos);
  EXPECT_NE(text.find("2.40"), std::string::npos);
  EXPECT_NE(text.find("faster than NCCL's better time at 2 of 2 sizes"), std::string::npos);
}

TEST(BenchReport, ProblemsNameEachBadMeasurementOnce) {
  BenchResults results = sample();
  // A variant that could not be set up fails at every size with one error: one entry.
  results.rows[2].collc = BenchTiming::failed("no kernel");
  results.rows[3].collc = BenchTiming::failed("no kernel");
  std::string text = render(writeProblems, results);
  EXPECT_NE(text.find("allreduce_twoshot/barrier at 1 KiB .. 2 KiB: FAILED\n    no kernel"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NCCL symmetric at 2 KiB: FAILED"), std::string::npos) << text;
  EXPECT_EQ(render(writeProblems, BenchResults{}), "");
}

TEST(BenchReport, CompileTimesAgainstTheirGoals) {
  CompileTimes times;
  times.variant = "allreduce_oneshot/ll bf16 sum, 2 ranks, sm_90";
  times.coldMs = 250;
  times.warmMs = 0.2;
  times.coldWasMiss = times.warmWasHit = true;
  std::string text;
  llvm::raw_string_ostream out(text);
  writeCompileTimes(out, times);
  EXPECT_NE(out.str().find("goal <= 300 ms: PASS"), std::string::npos) << text;
  EXPECT_NE(out.str().find("goal <= 1 ms: PASS"), std::string::npos) << text;
  times.coldMs = 400;
  times.warmWasHit = false; // a "warm" compile that missed the cache meets no goal
  text.clear();
  writeCompileTimes(out, times);
  EXPECT_NE(out.str().find("goal <= 300 ms: MISS"), std::string::npos) << text;
  EXPECT_NE(out.str().find("goal <= 1 ms: MISS (it missed the cache)"), std::string::npos) << text;
}

TEST(BenchReport, CsvHasMetadataThenOneRecordPerRow) {
  BenchResults results = sample();
  results.notes = {"skipped allreduce_oneshot/ll128: not available"};
  results.rows[0].collc.note = "a, \"quoted\"\nnote";
  std::vector<std::string> csv = lines(render(writeCsv, results));
  EXPECT_EQ(csv[0], "# collc_version: 0.1.0");
  EXPECT_EQ(csv[1], "# git_commit: abc1234");
  size_t header = 0;
  while (header < csv.size() && csv[header][0] == '#')
    ++header;
  ASSERT_EQ(csv.size(), header + 1 + results.rows.size());
  EXPECT_EQ(csv[header - 1], "# note: skipped allreduce_oneshot/ll128: not available");
  EXPECT_EQ(csv[header], "variant,spec,sync,bytes,count,status,us_per_op,algbw_gbps,busbw_gbps,"
                         "nccl_us,nccl_sym_us,vs_best,no_watchdog_us,watchdog_cost,note");
  EXPECT_EQ(csv[header + 1], "allreduce_oneshot/ll,allreduce_oneshot,ll,1024,512,ok,2,0.512,0.512,"
                             "5.86,3.7,1.85,,,\"a, \"\"quoted\"\" | note\"");
  EXPECT_EQ(csv[header + 4].substr(0, 61),
            "allreduce_twoshot/barrier,allreduce_twoshot,barrier,2048,1024");
  EXPECT_NE(csv[header + 4].find(",WRONG,,,,6,,,,,"), std::string::npos) << csv[header + 4];
}

TEST(BenchReport, JsonHoldsEveryRowWithNullsForUnreportedTimes) {
  BenchResults results = sample();
  CompileTimes times;
  times.coldMs = 200;
  times.warmMs = 0.5;
  times.warmWasHit = true;
  results.compileTimes = times;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(render(writeJson, results));
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object& root = *parsed->getAsObject();
  EXPECT_EQ(root.getObject("header")->getString("git_commit").getValueOr(""),
            llvm::StringRef("abc1234"));
  EXPECT_EQ(root.getObject("header")->getInteger("nranks").getValueOr(-1), 2);
  const llvm::json::Array& rows = *root.getArray("rows");
  ASSERT_EQ(rows.size(), 4u);
  const llvm::json::Object& first = *rows[0].getAsObject();
  EXPECT_EQ(first.getString("variant").getValueOr(""), llvm::StringRef("allreduce_oneshot/ll"));
  EXPECT_EQ(first.getInteger("bytes").getValueOr(-1), 1024);
  EXPECT_EQ(first.getNumber("us_per_op").getValueOr(-1), 2.0);
  EXPECT_EQ(first.getNumber("nccl_sym_us").getValueOr(-1), 3.7);
  EXPECT_NEAR(first.getNumber("vs_best").getValueOr(-1), 1.85, 1e-12);
  const llvm::json::Object& wrong = *rows[3].getAsObject();
  EXPECT_EQ(wrong.getString("status").getValueOr(""), llvm::StringRef("WRONG"));
  EXPECT_TRUE(wrong.get("us_per_op")->getAsNull());
  EXPECT_TRUE(wrong.get("vs_best")->getAsNull());
  const llvm::json::Array& nccl = *root.getArray("nccl");
  ASSERT_EQ(nccl.size(), 2u);
  EXPECT_TRUE(nccl[1].getAsObject()->get("symmetric_us")->getAsNull());
  EXPECT_EQ(nccl[1].getAsObject()->getString("symmetric_status").getValueOr(""),
            llvm::StringRef("FAILED"));
  EXPECT_EQ(root.getArray("best")->size(), 2u);
  EXPECT_EQ(root.getObject("compile_times")->getNumber("cold_ms").getValueOr(-1), 200.0);
  EXPECT_EQ(root.getObject("compile_times")->getBoolean("warm_meets_goal").getValueOr(false), true);
}

} // namespace
} // namespace collc
