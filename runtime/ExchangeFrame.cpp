#include "runtime/ExchangeFrame.h"

#include <algorithm>
#include <cstring>

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

llvm::Error packExchangeFrame(uint64_t sequence, int rank, llvm::StringRef label,
                              llvm::StringRef payload, char* slot) {
  if (payload.size() > kExchangePayloadBytes)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "host exchange '%s': %zu bytes per rank; at most %zu fit",
                                   label.str().c_str(), payload.size(), kExchangePayloadBytes);
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
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::string>> unpackExchangeFrames(const char* slots, int nranks,
                                                              uint64_t sequence,
                                                              llvm::StringRef label, int myRank) {
  const std::string mine = label.substr(0, kExchangeLabelBytes - 1).str();
  std::vector<std::string> payloads;
  for (int r = 0; r < nranks; ++r) {
    Header header;
    std::memcpy(&header, slots + size_t(r) * kExchangeSlotBytes, sizeof header);
    auto error = [&](const std::string& what) {
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "host exchange #%llu '%s' on rank %d: %s",
          static_cast<unsigned long long>(sequence), mine.c_str(), myRank, what.c_str());
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
