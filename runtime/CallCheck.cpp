#include "runtime/CallCheck.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace collc {

namespace {

uint64_t nameHash(const std::string& text) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (char c : text)
    hash = (hash ^ uint8_t(c)) * 1099511628211ull;
  return hash;
}

template <class Enum> std::string enumName(uint64_t value, Enum last) {
  if (value > uint64_t(last))
    return "#" + std::to_string(value);
  return std::string(name(Enum(value)));
}

std::string describeRow(const uint64_t* row, bool withKernel) {
  const auto kind = CollectiveKind(row[2]);
  std::string text =
      enumName(row[2], CollectiveKind::AllToAll) + " " + enumName(row[3], DType::BF16);
  const bool reduces = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter ||
                       kind == CollectiveKind::Reduce;
  if (reduces)
    text += " " + enumName(row[4], ReduceOp::Min);
  if (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce)
    text += " root " + std::to_string(row[5]);
  text += fmt::format(", {} elements", row[1]);
  if (withKernel)
    text += fmt::format(" (kernel #{:016x})", row[0]);
  return text;
}

} // namespace

CallDescription describeCall(const CompiledCollective& compiled, uint64_t count, bool refused) {
  return {nameHash(compiled.kernelName),
          count,
          uint64_t(compiled.kind),
          uint64_t(compiled.dtype),
          uint64_t(compiled.op),
          uint64_t(compiled.root),
          uint64_t(refused)};
}

std::string compareCalls(Span<const uint64_t> table, int nranks) {
  std::string refusers;
  for (int r = 0; r < nranks; ++r)
    if (table[size_t(r) * kCallWidth + 6])
      refusers += (refusers.empty() ? "" : ", ") + std::to_string(r);
  if (!refusers.empty())
    return "rank(s) " + refusers +
           " refused the call (the error there says why); nothing was "
           "launched";
  bool same = true, sameKernel = true;
  for (int r = 1; r < nranks; ++r)
    for (unsigned f = 0; f < kCallWidth; ++f) {
      const bool equal = table[size_t(r) * kCallWidth + f] == table[f];
      same = same && equal;
      sameKernel = sameKernel && (f != 0 || equal);
    }
  if (same)
    return "";
  // Where only the kernel differs (another sync strategy or launch shape), the hash says so.
  bool onlyKernel = !sameKernel;
  for (int r = 1; r < nranks && onlyKernel; ++r)
    for (unsigned f = 1; f < kCallWidth; ++f)
      onlyKernel = onlyKernel && table[size_t(r) * kCallWidth + f] == table[f];
  std::string message = "the ranks' calls differ:";
  for (int r = 0; r < nranks; ++r)
    message += fmt::format("{} rank {}: {}", r ? ";" : "", r,
                           describeRow(&table[size_t(r) * kCallWidth], onlyKernel));
  return message + " (every rank must make the same calls in the same order; nothing was "
                   "launched)";
}

Error checkCallAcrossRanks(SymmetricWorld& world, const CompiledCollective& compiled,
                           uint64_t count, bool refused) {
  const CallDescription mine = describeCall(compiled, count, refused);
  std::vector<uint64_t> table(size_t(world.nranks()) * kCallWidth);
  for (int r : world.localRanks())
    std::copy(mine.begin(), mine.end(), table.begin() + size_t(r) * kCallWidth);
  // A launch inside a graph capture is checked when captured: the exchange's own CUDA calls (on
  // streams the capture does not hold) are allowed on this thread meanwhile.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool relaxed = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  if (!relaxed)
    (void)cudaGetLastError();
  Error err = world.allGatherRanks("call check", table, kCallWidth);
  if (relaxed && cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess)
    (void)cudaGetLastError();
  if (err)
    return makeError(kCallCheckMarker + toString(std::move(err)));
  if (std::string differ = compareCalls(table, world.nranks()); !differ.empty())
    return makeError(kCallCheckMarker + differ);
  return Error::success();
}

} // namespace collc
