// The main of collc's GoogleTest programs: NVLink multicast off (the GPU machine's rule) before
// any test can load NCCL, then every test.
#include "tools/launch/NvlinkMulticast.h"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  collc::keepNvlinkMulticastOff();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
