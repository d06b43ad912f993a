#include "runtime/RankLaunch.h"

#include <algorithm>
#include <fmt/format.h>

namespace collc {

std::string rankLaunchProblem(int blocksPerRank, int ranks, int device, int computeMajor,
                              int multiprocessors, int blocksPerMultiprocessor) {
  const std::string gpu = "GPU " + std::to_string(device);
  if (ranks < 1 || ranks > COLLC_MAX_RANKS)
    return fmt::format("{} ranks in one launch; the ABI allows 1 to {}", ranks, COLLC_MAX_RANKS);
  if (blocksPerRank < 1 || blocksPerRank > COLLC_MAX_BLOCKS)
    return fmt::format("{} blocks per rank; the ABI allows 1 to {}", blocksPerRank,
                       COLLC_MAX_BLOCKS);
  if (computeMajor < kLargeParamsComputeMajor)
    return fmt::format("{} has compute capability {}.x: one launch of every rank passes {} bytes "
                       "of kernel parameters, which needs {}.0 or later",
                       gpu, computeMajor, sizeof(collc_rank_launch), kLargeParamsComputeMajor);
  if (multiprocessors < 1 || blocksPerMultiprocessor < 1)
    return fmt::format("{}'s multiprocessors ({}) or the blocks of this kernel that fit on one "
                       "({}) could not be read, so it cannot be checked that every block of "
                       "every rank will be resident at once",
                       gpu, multiprocessors, blocksPerMultiprocessor);
  const int64_t blocks = int64_t(blocksPerRank) * ranks;
  const int64_t resident = int64_t(multiprocessors) * blocksPerMultiprocessor;
  if (blocks <= resident)
    return "";
  const int most = int(resident / ranks);
  return fmt::format(
      "{} ranks of {} blocks are {} blocks in one launch, but {} holds at most {} of this "
      "kernel's blocks at once ({} multiprocessors x {}). Every block waits on the others, so "
      "all must be resident; {}",
      ranks, blocksPerRank, blocks, gpu, resident, multiprocessors, blocksPerMultiprocessor,
      most > 0 ? fmt::format("compile for at most {} blocks per rank (--blocks {}) or run fewer "
                             "ranks",
                             most, most)
               : fmt::format("run at most {} ranks", resident));
}

Expected<std::optional<std::vector<RankCall>>> RankCallGather::add(int rank, const RankCall& call) {
  const int nranks = int(pending_.size());
  if (rank < 0 || rank >= nranks)
    return makeError(fmt::format("one launch of every rank: no rank {} among {}", rank, nranks));
  std::deque<RankCall>& mine = pending_[size_t(rank)];
  const size_t position = mine.size(); // this call is call `position` still waiting
  for (int other = 0; other < nranks; ++other) {
    const std::deque<RankCall>& theirs = pending_[size_t(other)];
    if (other == rank)
      continue;
    if (theirs.size() > position) {
      const RankCall& same = theirs[position];
      if (same.count != call.count)
        return makeError(fmt::format("one launch of every rank: rank {} calls with {} elements, "
                                     "but rank {} made the same call with {}: every rank must "
                                     "make the same calls",
                                     rank, call.count, other, same.count));
      if (same.stream != call.stream)
        return makeError(fmt::format("one launch of every rank: rank {} calls on another stream "
                                     "than rank {} made the same call on: the ranks of a world "
                                     "launched as one share its one stream",
                                     rank, other));
    }
    if (theirs.empty() && position >= kMostCallsAhead)
      return makeError(fmt::format("one launch of every rank: rank {} is {} calls ahead of rank "
                                   "{}, which has made none of them: every rank must make the "
                                   "same calls",
                                   rank, position, other));
  }
  mine.push_back(call);
  if (!std::all_of(pending_.begin(), pending_.end(),
                   [](const std::deque<RankCall>& calls) { return !calls.empty(); }))
    return std::optional<std::vector<RankCall>>();
  std::vector<RankCall> one;
  one.reserve(pending_.size());
  for (std::deque<RankCall>& calls : pending_) {
    one.push_back(calls.front());
    calls.pop_front();
  }
  return std::optional<std::vector<RankCall>>(std::move(one));
}

collc_rank_launch buildRankLaunch(const collc_params& common, Span<const RankCall> calls,
                                  Span<unsigned long long* const> epochs,
                                  Span<collc_watchdog* const> watchdogs) {
  collc_rank_launch launch{};
  launch.common = common;
  // Per rank below; nothing of one rank's is left in the common part.
  launch.common.in = nullptr;
  launch.common.out = nullptr;
  std::fill(std::begin(launch.common.aux), std::end(launch.common.aux), nullptr);
  launch.common.epochs = nullptr;
  launch.common.watchdog = nullptr;
  launch.common.rank = -1;
  const size_t nranks = std::min<size_t>(calls.size(), COLLC_MAX_RANKS);
  for (size_t r = 0; r < nranks; ++r) {
    collc_rank_call& mine = launch.ranks[r];
    mine.in = calls[r].in;
    mine.out = calls[r].out;
    std::copy(calls[r].aux.begin(), calls[r].aux.end(), std::begin(mine.aux));
    mine.epochs = r < epochs.size() ? epochs[r] : nullptr;
    mine.watchdog = r < watchdogs.size() ? watchdogs[r] : nullptr;
  }
  return launch;
}

} // namespace collc
