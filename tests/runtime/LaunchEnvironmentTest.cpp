// The launch environment of a process-per-GPU world: torchrun's and Open MPI's variables, the
// rendezvous that must come with them, node-size overrides and the GPU a rank takes.
#include "runtime/LaunchEnvironment.h"

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

std::string errorOf(Expected<std::optional<LaunchEnvironment>> parsed) {
  if (parsed)
    return "";
  return toString(parsed.takeError());
}

TEST(LaunchEnvironment, NoLauncherVariablesMeansNotLaunched) {
  Expected<std::optional<LaunchEnvironment>> parsed = parseLaunchEnvironment(env({}));
  ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
  EXPECT_FALSE(parsed->has_value());
}

TEST(LaunchEnvironment, TorchrunStyle) {
  Expected<std::optional<LaunchEnvironment>> parsed =
      parseLaunchEnvironment(env({{"RANK", "3"},
                                  {"WORLD_SIZE", "4"},
                                  {"LOCAL_RANK", "1"},
                                  {"LOCAL_WORLD_SIZE", "2"},
                                  {"COLLC_RENDEZVOUS", "tcp:10.0.0.1:29600"}}));
  ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
  ASSERT_TRUE(parsed->has_value());
  const LaunchEnvironment& e = **parsed;
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.worldSize, 4);
  EXPECT_EQ(e.localRank, 1);
  EXPECT_EQ(e.localWorldSize, 2);
  EXPECT_EQ(e.rendezvous, "tcp:10.0.0.1:29600");
  EXPECT_EQ(e.source, "RANK/WORLD_SIZE");
}

TEST(LaunchEnvironment, OpenMpiStyleAndLocalRankDefault) {
  Expected<std::optional<LaunchEnvironment>> parsed =
      parseLaunchEnvironment(env({{"OMPI_COMM_WORLD_RANK", "1"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"COLLC_RENDEZVOUS", "file:/tmp/id"}}));
  ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->rank, 1);
  EXPECT_EQ((*parsed)->localRank, 1) << "without LOCAL_RANK the rank is the local rank";
  EXPECT_EQ((*parsed)->source, "OMPI_COMM_WORLD_*");
}

TEST(LaunchEnvironment, ErrorsNameTheVariable) {
  const std::string rendezvous = "file:/tmp/x";
  EXPECT_NE(errorOf(parseLaunchEnvironment(env({{"RANK", "0"}}))).find("WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(errorOf(parseLaunchEnvironment(env(
                        {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"COLLC_RENDEZVOUS", rendezvous}})))
                .find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(errorOf(parseLaunchEnvironment(env(
                        {{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"COLLC_RENDEZVOUS", rendezvous}})))
                .find("RANK='x'"),
            std::string::npos);
  EXPECT_NE(errorOf(parseLaunchEnvironment(env(
                        {{"RANK", "0"}, {"WORLD_SIZE", "73"}, {"COLLC_RENDEZVOUS", rendezvous}})))
                .find("at most 72 ranks"),
            std::string::npos);
  EXPECT_NE(errorOf(parseLaunchEnvironment(env({{"RANK", "0"}, {"WORLD_SIZE", "2"}})))
                .find("COLLC_RENDEZVOUS is not"),
            std::string::npos);
  EXPECT_NE(errorOf(parseLaunchEnvironment(env({{"RANK", "0"},
                                                {"WORLD_SIZE", "2"},
                                                {"LOCAL_RANK", "3"},
                                                {"LOCAL_WORLD_SIZE", "2"},
                                                {"COLLC_RENDEZVOUS", rendezvous}})))
                .find("LOCAL_RANK=3 is not below LOCAL_WORLD_SIZE=2"),
            std::string::npos);
}

TEST(LaunchEnvironment, NodeSizeOverride) {
  std::string setting;
  Expected<int> none = parseNodeSizeOverride(env({}), setting);
  ASSERT_TRUE(bool(none));
  EXPECT_EQ(*none, 0);
  EXPECT_EQ(setting, "");

  Expected<int> each = parseNodeSizeOverride(env({{"COLLC_TREAT_EACH_GPU_AS_NODE", "1"}}), setting);
  ASSERT_TRUE(bool(each));
  EXPECT_EQ(*each, 1);
  EXPECT_EQ(setting, "COLLC_TREAT_EACH_GPU_AS_NODE=1");

  Expected<int> off = parseNodeSizeOverride(env({{"COLLC_TREAT_EACH_GPU_AS_NODE", "0"}}), setting);
  ASSERT_TRUE(bool(off));
  EXPECT_EQ(*off, 0);

  Expected<int> four = parseNodeSizeOverride(env({{"COLLC_NODE_SIZE", "4"}}), setting);
  ASSERT_TRUE(bool(four));
  EXPECT_EQ(*four, 4);
  EXPECT_EQ(setting, "COLLC_NODE_SIZE=4");

  Expected<int> bad = parseNodeSizeOverride(env({{"COLLC_NODE_SIZE", "0"}}), setting);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(toString(bad.takeError()).find("positive"), std::string::npos);

  Expected<int> clash = parseNodeSizeOverride(
      env({{"COLLC_NODE_SIZE", "2"}, {"COLLC_TREAT_EACH_GPU_AS_NODE", "1"}}), setting);
  ASSERT_FALSE(bool(clash));
  EXPECT_NE(toString(clash.takeError()).find("disagree"), std::string::npos);
}

TEST(LaunchEnvironment, DeviceChoice) {
  LaunchEnvironment e;
  e.rank = 5;
  e.localRank = 1;
  Expected<int> device = chooseDevice(e, 2);
  ASSERT_TRUE(bool(device));
  EXPECT_EQ(*device, 1);
  // One GPU visible per process (CUDA_VISIBLE_DEVICES set by the launcher): it is device 0.
  device = chooseDevice(e, 1);
  ASSERT_TRUE(bool(device));
  EXPECT_EQ(*device, 0);
  e.localRank = 3;
  device = chooseDevice(e, 2);
  ASSERT_FALSE(bool(device));
  EXPECT_NE(toString(device.takeError()).find("needs GPU 3, but 2 are visible"), std::string::npos);
  // Ranks that may share GPUs wrap around the visible ones.
  e.shareGpu = true;
  device = chooseDevice(e, 2);
  ASSERT_TRUE(bool(device));
  EXPECT_EQ(*device, 1);
}

TEST(LaunchEnvironment, ShareGpuIsAskedForExplicitly) {
  const std::map<std::string, std::string> base = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"COLLC_RENDEZVOUS", "file:/tmp/x"}};
  Expected<std::optional<LaunchEnvironment>> parsed = parseLaunchEnvironment(env(base));
  ASSERT_TRUE(parsed && parsed->has_value());
  EXPECT_FALSE((*parsed)->shareGpu);
  for (auto [value, expected] : {std::pair{"1", true}, std::pair{"0", false}}) {
    std::map<std::string, std::string> vars = base;
    vars["COLLC_SHARE_GPU"] = value;
    parsed = parseLaunchEnvironment(env(vars));
    ASSERT_TRUE(parsed && parsed->has_value()) << value;
    EXPECT_EQ((*parsed)->shareGpu, expected) << value;
  }
  std::map<std::string, std::string> vars = base;
  vars["COLLC_SHARE_GPU"] = "yes";
  EXPECT_NE(errorOf(parseLaunchEnvironment(env(vars))).find("COLLC_SHARE_GPU='yes' must be 0 or 1"),
            std::string::npos);
}

} // namespace
} // namespace collc
