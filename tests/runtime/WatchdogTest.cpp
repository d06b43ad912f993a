// The watchdog's default bound: 5 s, or what COLLC_WATCHDOG_TIMEOUT says. ctest runs
// DefaultFollowsTheEnvironment twice: as it is, and as watchdog_timeout_from_environment with
// COLLC_WATCHDOG_TIMEOUT=2.5 (tests/runtime/CMakeLists.txt), which must then give 2.5 s.
#include "runtime/Watchdog.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <string>

namespace collc {
namespace {

TEST(Watchdog, ReadsSecondsInRange) {
  EXPECT_EQ(parseWatchdogTimeout("2.5"), 2'500'000'000u);
  EXPECT_EQ(parseWatchdogTimeout("3600"), 3'600'000'000'000u);
  EXPECT_EQ(parseWatchdogTimeout("0.001"), 1'000'000u);
  for (const char* wrong : {"", "0", "-1", "3601", "abc", "5s", "nan", "inf"})
    EXPECT_EQ(parseWatchdogTimeout(wrong), std::nullopt) << "'" << wrong << "'";
}

TEST(Watchdog, DefaultFollowsTheEnvironment) {
  const char* expected = std::getenv("COLLC_TEST_EXPECTED_WATCHDOG_NS");
  if (!expected && std::getenv("COLLC_WATCHDOG_TIMEOUT"))
    GTEST_SKIP() << "COLLC_WATCHDOG_TIMEOUT is set in this environment";
  EXPECT_EQ(defaultWatchdogTimeoutNs(),
            expected ? std::stoull(expected) : kBuiltInWatchdogTimeoutNs);
}

} // namespace
} // namespace collc
