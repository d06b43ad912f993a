// main() of gpu_procs_tests. Run plainly it is a googletest binary whose tests start copies of
// itself, one process per GPU, through collc's launcher; a copy (`--child SCENARIO ...`) runs one
// scenario of tests/gpu/ProcsChild.cpp as one rank and exits.
#include "tests/gpu/ProcsChild.h"
#include "tools/launch/NvlinkMulticast.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  collc::keepNvlinkMulticastOff(); // the GPU machine's rule, before anything loads NCCL
  if (argc > 1 && std::string(argv[1]) == "--child")
    return collc::procstest::runChild(std::vector<std::string>(argv + 2, argv + argc));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
