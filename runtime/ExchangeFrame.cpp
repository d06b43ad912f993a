#include "runtime/ExchangeFrame.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace collc {

namespace {

// Layout of a slot: magic, sequence, rank, payload length, label (NUL-padded), payload.
constexpr uint64_t kMagic = 0x68637863636c6c63ull; // "cllccxch", little-endian
struct Header {
  uint64_t magic;
  uint64_t sequence;
  int32_t rank;
  uint32_t length;
  char label[kExchangeLabelBytes];
};
static_assert(sizeof(Header) == 24 + kExchangeLabelBytes, "the header has no padding");

std::string labelOf(const Header& header) {
  return std::string(header.label, strnlen(header.label, sizeof header.label));
}

} // namespace

Error packExchangeFrame(uint64_t sequence, int rank, std::string_view label,
                        std::string_view payload, char* slot) {
  if (payload.size() > kExchangePayloadBytes)
    return makeError(fmt::format("host exchange '{}': {} bytes per rank; at most {} fit", label,
                                 payload.size(), kExchangePayloadBytes));
  Header header{};
  header.magic = kMagic;
  header.sequence = sequence;
  header.rank = rank;
  header.length = static_cast<uint32_t>(payload.size());
  std::memcpy(header.label, label.data(), std::min(label.size(), sizeof header.label - 1));
  std::memset(slot, 0, kExchangeSlotBytes);
  std::memcpy(slot, &header, sizeof header);
  if (!payload.empty())
    std::memcpy(slot + sizeof header, payload.data(), payload.size());
  return Error::success();
}

Expected<std::vector<std::string>> unpackExchangeFrames(const char* slots, int nranks,
                                                        uint64_t sequence, std::string_view label,
                                                        int myRank) {
  const std::string mine(label.substr(0, kExchangeLabelBytes - 1));
  std::vector<std::string> payloads;
  for (int r = 0; r < nranks; ++r) {
    Header header;
    std::memcpy(&header, slots + size_t(r) * kExchangeSlotBytes, sizeof header);
    auto error = [&](const std::string& what) {
      return makeError(
          fmt::format("host exchange #{} '{}' on rank {}: {}", sequence, mine, myRank, what));
    };
    if (header.magic != kMagic || header.rank != r || header.length > kExchangePayloadBytes)
      return error("rank " + std::to_string(r) + "'s slot is not a collc exchange frame");
    if (header.sequence != sequence || labelOf(header) != mine)
      return error("rank " + std::to_string(r) + " is at exchange #" +
                   std::to_string(header.sequence) + " '" + labelOf(header) +
                   "': the processes made different sequences of collective calls (every "
                   "process must create the same worlds and instances and run the same calls, "
                   "in the same order)");
    payloads.emplace_back(slots + size_t(r) * kExchangeSlotBytes + sizeof header, header.length);
  }
  return payloads;
}

} // namespace collc
