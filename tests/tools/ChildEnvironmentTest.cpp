// What collc's launcher hands its children: the variables a child parses back into its place in
// the world, and that the launcher started it.
#include "tools/launch/ChildEnvironment.h"

#include <gtest/gtest.h>
#include <map>

namespace collc {
namespace {

EnvironmentLookup env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end())
      return std::nullopt;
    return it->second;
  };
}

TEST(ChildEnvironment, RoundTripsThroughTheLaunchEnvironment) {
  Expected<std::vector<std::pair<std::string, std::string>>> vars =
      childEnvironment(1, 2, "file:/tmp/d/nccl-id", 4242, env({}));
  ASSERT_TRUE(bool(vars)) << toString(vars.takeError());
  std::map<std::string, std::string> child(vars->begin(), vars->end());
  EXPECT_EQ(child["NCCL_NVLS_ENABLE"], "0");
  EXPECT_EQ(child["COLLC_LAUNCHER_PID"], "4242");
  // What the launcher sets is what a child parses.
  Expected<std::optional<LaunchEnvironment>> parsed = parseLaunchEnvironment(env(child));
  ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->rank, 1);
  EXPECT_EQ((*parsed)->worldSize, 2);
  EXPECT_EQ((*parsed)->localRank, 1);
  EXPECT_EQ((*parsed)->rendezvous, "file:/tmp/d/nccl-id");
  EXPECT_TRUE(startedByCollcLauncher(env(child), 4242));
  EXPECT_FALSE(startedByCollcLauncher(env(child), 4243));
  EXPECT_FALSE(startedByCollcLauncher(env({}), 4242));
}

TEST(ChildEnvironment, RefusesNvlinkMulticast) {
  Expected<std::vector<std::pair<std::string, std::string>>> vars =
      childEnvironment(0, 2, "file:/tmp/x", 1, env({{"NCCL_NVLS_ENABLE", "1"}}));
  ASSERT_FALSE(bool(vars));
  EXPECT_NE(toString(vars.takeError()).find("NCCL_NVLS_ENABLE=1"), std::string::npos);
}

} // namespace
} // namespace collc
