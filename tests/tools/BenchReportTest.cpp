// What `collc bench` reports, without a GPU: the sizes of a sweep, the arithmetic behind each
// column (a wrong busbw or ratio would mislead every comparison with NCCL), and the table, CSV
// and JSON written from synthetic rows.
#include "tools/bench/BenchReport.h"

#include "abi/CompiledCollective.h"
#include "tools/bench/BenchResults.h"
#include "tools/command/Arguments.h"

#include <algorithm>
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
  auto best = bestPerSize(results, CollectiveKind::AllReduce);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].first, 1024u);
  EXPECT_EQ(best[0].second->variant(), "allreduce_oneshot/ll");
  EXPECT_EQ(best[1].second->variant(), "allreduce_oneshot/ll"); // twoshot's is wrong
  results.rows[1].collc = BenchTiming::failed("gone");
  EXPECT_EQ(bestPerSize(results, CollectiveKind::AllReduce)[1].second, nullptr);
  EXPECT_TRUE(bestPerSize(results, CollectiveKind::AllGather).empty()); // no row of that kind
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
  EXPECT_NE(text.find("than the better time of NCCL's ncclAllReduce)"), std::string::npos) << text;
  EXPECT_NE(text.find("faster than the better time of ncclAllReduce at 2 of 2 sizes"),
            std::string::npos)
      << text;
  // One kind: one table, whose title names no kind.
  EXPECT_EQ(text.find("best collc allreduce variant"), std::string::npos) << text;
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
  EXPECT_NE(text.find("NCCL ncclAllReduce symmetric at 2 KiB: FAILED"), std::string::npos) << text;
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
  EXPECT_EQ(csv[header],
            "variant,spec,sync,launch,kind,bytes,count,status,us_per_op,algbw_gbps,busbw_gbps,"
            "nccl_collective,nccl_us,nccl_sym_us,vs_best,no_watchdog_us,watchdog_cost,note");
  EXPECT_EQ(csv[header + 1],
            "allreduce_oneshot/ll,allreduce_oneshot,ll,,allreduce,1024,512,ok,2,0.512,0.512,"
            "ncclAllReduce,5.86,3.7,1.85,,,\"a, \"\"quoted\"\" | note\"");
  EXPECT_EQ(csv[header + 4].substr(0, 72),
            "allreduce_twoshot/barrier,allreduce_twoshot,barrier,,allreduce,2048,1024");
  EXPECT_NE(csv[header + 4].find(",WRONG,,,,ncclAllReduce,6,,,,,"), std::string::npos)
      << csv[header + 4];
}

TEST(BenchReport, AVariantWithItsLaunchShapeIsNamedByItEverywhere) {
  EXPECT_EQ(launchText(LaunchShape{132, 1024, 16, 1, 1}), "132x1024 v16 u1 w1");
  EXPECT_EQ(launchText(LaunchShape{8, 512, 16, 2, 0}), "8x512 v16 u2") << "w1 only where on";
  BenchResults results = sample();
  for (BenchRow& row : results.rows)
    if (row.spec == "allreduce_twoshot")
      row.launch = "132x1024 v16 u1 w1";
  const std::string name = "allreduce_twoshot/barrier 132x1024 v16 u1 w1";
  EXPECT_EQ(results.rows[2].variant(), name);
  EXPECT_EQ(results.rows[0].variant(), "allreduce_oneshot/ll") << "no shape known, none named";

  std::vector<std::string> table = lines(
      render([](llvm::raw_ostream& out, const BenchResults& r) { writeTable(out, r); }, results));
  EXPECT_EQ(std::count_if(table.begin(), table.end(),
                          [&](const std::string& line) { return line.rfind(name, 0) == 0; }),
            2)
      << "both of its rows";
  std::vector<std::string> csv = lines(render(writeCsv, results));
  EXPECT_EQ(std::count_if(csv.begin(), csv.end(),
                          [&](const std::string& line) {
                            return line.rfind(name + ",allreduce_twoshot,barrier,132x1024 v16 u1 "
                                                     "w1,allreduce,",
                                              0) == 0;
                          }),
            2);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(render(writeJson, results));
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object& third = *(*parsed->getAsObject()->getArray("rows"))[2].getAsObject();
  EXPECT_EQ(third.getString("variant").getValueOr(""), llvm::StringRef(name));
  EXPECT_EQ(third.getString("launch").getValueOr(""), llvm::StringRef("132x1024 v16 u1 w1"));
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
  EXPECT_EQ(first.getString("kind").getValueOr(""), llvm::StringRef("allreduce"));
  EXPECT_EQ(first.getString("nccl_collective").getValueOr(""), llvm::StringRef("ncclAllReduce"));
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
  EXPECT_EQ(nccl[0].getAsObject()->getString("kind").getValueOr(""), llvm::StringRef("allreduce"));
  EXPECT_EQ(nccl[0].getAsObject()->getString("collective").getValueOr(""),
            llvm::StringRef("ncclAllReduce"));
  // NCCL's bus bandwidth with the factor of its kind: 1024 B in 3.70 us on 2 ranks, 2(n-1)/n = 1.
  EXPECT_NEAR(nccl[0].getAsObject()->getNumber("symmetric_busbw_gbps").getValueOr(-1),
              1024 / 3.70e3, 1e-12);
  EXPECT_TRUE(nccl[1].getAsObject()->get("symmetric_busbw_gbps")->getAsNull());
  EXPECT_EQ(root.getArray("best")->size(), 2u);
  EXPECT_EQ(root.getObject("compile_times")->getNumber("cold_ms").getValueOr(-1), 200.0);
  EXPECT_EQ(root.getObject("compile_times")->getBoolean("warm_meets_goal").getValueOr(false), true);
}

/// `collc bench all`: an allreduce and an allgather variant at the same sizes, NCCL's
/// ncclAllReduce and ncclAllGather at each (4 ranks, bf16); no NCCL figure for the broadcast.
BenchResults mixedKinds() {
  BenchResults results = sample();
  results.header.nranks = 4;
  results.rows.resize(2); // allreduce_oneshot/ll at 1 and 2 KiB
  auto row = [](const char* spec, CollectiveKind kind, uint64_t bytes, double us) {
    BenchRow r;
    r.spec = spec;
    r.sync = "ll";
    r.kind = kind;
    r.bytes = bytes;
    r.count = bytes / 2;
    r.collc = BenchTiming::measured(us);
    return r;
  };
  results.rows.push_back(row("allgather_direct", CollectiveKind::AllGather, 1024, 3.0));
  results.rows.push_back(row("allgather_direct", CollectiveKind::AllGather, 2048, 12.0));
  results.rows.push_back(row("broadcast_direct", CollectiveKind::Broadcast, 1024, 1.0));
  results.nccl[1].symmetric = BenchTiming::measured(5.0);
  NcclPoint gather1{1024, BenchTiming::measured(9.0), BenchTiming::measured(7.5),
                    CollectiveKind::AllGather};
  NcclPoint gather2{2048, BenchTiming::measured(10.0), BenchTiming::wrong("bad"),
                    CollectiveKind::AllGather};
  results.nccl.push_back(gather1);
  results.nccl.push_back(gather2);
  return results;
}

TEST(BenchReport, EachRowIsComparedWithNcclsSameCollective) {
  BenchResults results = mixedKinds();
  EXPECT_EQ(results.ncclAt(CollectiveKind::AllGather, 1024)->plain.us, 9.0);
  EXPECT_EQ(results.ncclAt(CollectiveKind::AllReduce, 1024)->plain.us, 5.86);
  EXPECT_EQ(results.ncclAt(CollectiveKind::Broadcast, 1024), nullptr);
  EXPECT_EQ(results.ncclFor(results.rows[2]), results.ncclAt(CollectiveKind::AllGather, 1024));
  EXPECT_EQ(results.kinds(),
            (std::vector<CollectiveKind>{CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                         CollectiveKind::Broadcast}));
  EXPECT_EQ(kindList(results.kinds()), "allreduce, allgather, broadcast");
  std::vector<std::string> table = lines(
      render([](llvm::raw_ostream& out, const BenchResults& r) { writeTable(out, r); }, results));
  // allgather at 1 KiB: 3 us against ncclAllGather's 9.0 and 7.5 (not ncclAllReduce's 5.86 and
  // 3.70): 7.5 / 3 = 2.50; busbw = 1024 / 3e3 * (n-1) = 1.02.
  EXPECT_EQ(words(table[4]), (std::vector<std::string>{"allgather_direct/ll", "1024", "512", "3.00",
                                                       "0.34", "1.02", "9.00", "7.50", "2.50"}));
  // 2 KiB: the wrong symmetric result is no baseline; 10.0 / 12 = 0.83.
  EXPECT_EQ(words(table[5]),
            (std::vector<std::string>{"allgather_direct/ll", "2048", "1024", "12.00", "0.17",
                                      "0.51", "10.00", "WRONG", "0.83"}));
  // No NCCL figure for a broadcast: no NCCL column, no ratio.
  EXPECT_EQ(words(table[7]), (std::vector<std::string>{"broadcast_direct/ll", "1024", "512", "1.00",
                                                       "1.02", "1.02", "-", "-", "-"}));
}

TEST(BenchReport, BestPerSizeKeepsKindsApart) {
  BenchResults results = mixedKinds();
  // The broadcast at 1 KiB (1 us) is faster than every allreduce, but is no allreduce.
  auto allReduce = bestPerSize(results, CollectiveKind::AllReduce);
  ASSERT_EQ(allReduce.size(), 2u);
  EXPECT_EQ(allReduce[0].second->variant(), "allreduce_oneshot/ll");
  auto allGather = bestPerSize(results, CollectiveKind::AllGather);
  ASSERT_EQ(allGather.size(), 2u);
  EXPECT_EQ(allGather[0].second->variant(), "allgather_direct/ll");

  const std::string text = render(writeBestPerSize, results);
  // One table per kind, each against its own NCCL call.
  EXPECT_NE(text.find("best collc allreduce variant per size (vs_best above 1: collc is faster "
                      "than the better time of NCCL's ncclAllReduce)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("best collc allgather variant per size (vs_best above 1: collc is faster "
                      "than the better time of NCCL's ncclAllGather)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("best collc broadcast variant per size"), std::string::npos) << text;
  EXPECT_NE(text.find("faster than the better time of ncclAllReduce at 2 of 2 sizes"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("faster than the better time of ncclAllGather at 1 of 2 sizes"),
            std::string::npos)
      << text;

  std::vector<std::string> csv = lines(render(writeCsv, results));
  size_t header = 0;
  while (header < csv.size() && csv[header][0] == '#')
    ++header;
  EXPECT_NE(csv[header + 3].find(",allgather,1024,512,ok,3,"), std::string::npos)
      << csv[header + 3];
  EXPECT_NE(csv[header + 3].find(",ncclAllGather,9,7.5,2.5,"), std::string::npos)
      << csv[header + 3];
  EXPECT_NE(csv[header + 5].find(",broadcast,1024,512,ok,1,1.024,1.024,,,,,"), std::string::npos)
      << csv[header + 5];

  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(render(writeJson, results));
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Object& root = *parsed->getAsObject();
  const llvm::json::Object& gather = *(*root.getArray("rows"))[2].getAsObject();
  EXPECT_EQ(gather.getString("nccl_collective").getValueOr(""), llvm::StringRef("ncclAllGather"));
  EXPECT_NEAR(gather.getNumber("vs_best").getValueOr(-1), 2.5, 1e-12);
  const llvm::json::Object& broadcast = *(*root.getArray("rows"))[4].getAsObject();
  EXPECT_EQ(broadcast.getString("nccl_collective").getValueOr("?"), llvm::StringRef(""));
  const llvm::json::Object& gatherPoint = *(*root.getArray("nccl"))[2].getAsObject();
  EXPECT_EQ(gatherPoint.getString("collective").getValueOr(""), llvm::StringRef("ncclAllGather"));
  // NCCL's busbw with the allgather factor, n-1 = 3: 1024 B in 9 us.
  EXPECT_NEAR(gatherPoint.getNumber("plain_busbw_gbps").getValueOr(-1), 1024 / 9e3 * 3, 1e-12);
  // "best": one entry per kind and size, each with its kind.
  const llvm::json::Array& best = *root.getArray("best");
  ASSERT_EQ(best.size(), 5u);
  EXPECT_EQ(best[2].getAsObject()->getString("kind").getValueOr(""), llvm::StringRef("allgather"));
  EXPECT_EQ(best[4].getAsObject()->getString("kind").getValueOr(""), llvm::StringRef("broadcast"));
}

TEST(BenchReport, NcclNoteSaysWhichCollectiveWasMeasured) {
  NcclCollective allReduce;
  allReduce.dtype = DType::BF16;
  // AllReduce alone: the note as it always read.
  EXPECT_EQ(ncclNote({allReduce}, /*oneProcess=*/true),
            "ncclAllReduce with cudaMalloc buffers (nccl_us) and with symmetric windows, "
            "ncclMemAlloc + ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC) (nccl_sym_us); "
            "one communicator per GPU, measured before collc's kernels");
  EXPECT_EQ(ncclNote({allReduce}, /*oneProcess=*/false),
            "ncclAllReduce with cudaMalloc buffers on the world's communicator, timed by collc's "
            "harness (nccl_us); symmetric windows are measured in one-process mode only (collc "
            "bench without --procs)");
  NcclCollective broadcast = allReduce;
  broadcast.kind = CollectiveKind::Broadcast;
  broadcast.root = 1;
  const std::string one = ncclNote({broadcast}, true);
  EXPECT_EQ(one.rfind("ncclBroadcast (root 1) with cudaMalloc buffers (nccl_us)", 0), 0u) << one;
  NcclCollective allToAll = allReduce;
  allToAll.kind = CollectiveKind::AllToAll;
  const std::string several = ncclNote({allReduce, broadcast, allToAll}, false);
  EXPECT_EQ(several.rfind("NCCL's same collective per kind (allreduce: ncclAllReduce; broadcast: "
                          "ncclBroadcast root 1; alltoall: ncclSend/ncclRecv to every rank in one "
                          "group) with cudaMalloc buffers on the world's communicator",
                          0),
            0u)
      << several;
}

} // namespace
} // namespace collc
