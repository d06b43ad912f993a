// The rule for streams (runtime/StreamOrder.h), the choice that needs no GPU: what a rank's call
// does about its last eager call's stream. The waits themselves run in
// tests/gpu/StreamOrderGpuTest.
#include "runtime/StreamOrder.h"

#include <gtest/gtest.h>

namespace collc {
namespace {

cudaStream_t streamNamed(uintptr_t id) {
  return reinterpret_cast<cudaStream_t>(id);
}

TEST(StreamOrder, AnEagerCallOnAnotherStreamWaitsForTheLast) {
  EXPECT_EQ(streamOrderStep(true, streamNamed(1), streamNamed(2), false),
            StreamOrderStep::WaitAndRecord);
  // The legacy default stream is a stream like any other.
  EXPECT_EQ(streamOrderStep(true, streamNamed(1), nullptr, false), StreamOrderStep::WaitAndRecord);
  EXPECT_EQ(streamOrderStep(true, nullptr, streamNamed(1), false), StreamOrderStep::WaitAndRecord);
}

TEST(StreamOrder, TheSameStreamOrTheFirstCallOnlyRecords) {
  EXPECT_EQ(streamOrderStep(true, streamNamed(1), streamNamed(1), false), StreamOrderStep::Record);
  EXPECT_EQ(streamOrderStep(false, nullptr, streamNamed(3), false), StreamOrderStep::Record);
  EXPECT_EQ(streamOrderStep(true, nullptr, nullptr, false), StreamOrderStep::Record);
}

TEST(StreamOrder, ACapturedCallIsLeftToItsGraph) {
  // Waiting inside a capture on an event recorded outside it would end the capture.
  EXPECT_EQ(streamOrderStep(true, streamNamed(1), streamNamed(2), true), StreamOrderStep::None);
  EXPECT_EQ(streamOrderStep(true, streamNamed(1), streamNamed(1), true), StreamOrderStep::None);
  EXPECT_EQ(streamOrderStep(false, nullptr, streamNamed(1), true), StreamOrderStep::None);
}

} // namespace
} // namespace collc
