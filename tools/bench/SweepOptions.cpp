#include "tools/bench/SweepOptions.h"

#include "tools/bench/BenchResults.h"

#include <utility>

namespace collc::driver {

std::vector<OptionSpec> sweepOptions() {
  return {{"b", "SIZE", "smallest message, bytes per rank (K/M/G suffixes; default 1K)"},
          {"e", "SIZE", "largest message, bytes per rank (default 64M)"},
          {"f", "FACTOR", "size factor from one step to the next (default 2)"}};
}

bool parseSweep(const ParsedArguments& args, uint64_t& begin, uint64_t& end, uint64_t& factor,
                const char* what, std::string& error) {
  for (auto [option, target] : {std::pair<const char*, uint64_t*>{"b", &begin},
                                std::pair<const char*, uint64_t*>{"e", &end},
                                std::pair<const char*, uint64_t*>{"f", &factor}}) {
    if (auto text = args.get(option)) {
      auto value = parseSize(*text);
      if (!value)
        return error = std::string("-") + option +
                       " takes a number of bytes (K/M/G allowed), not '" + *text + "'",
               false;
      *target = *value;
    }
  }
  if (sweepSizes(begin, end, factor).empty())
    return error = std::string("no sizes to ") + what +
                   ": -b must be at least 1 and at most -e, and -f at least 2",
           false;
  return true;
}

bool parseSweepCounts(const ParsedArguments& args, uint64_t begin, uint64_t end, uint64_t factor,
                      uint64_t elementBytes, std::vector<uint64_t>& counts, std::string& error) {
  if (!parseSweep(args, begin, end, factor, "measure", error))
    return false;
  counts.clear();
  for (uint64_t bytes : sweepSizes(begin, end, factor))
    if (bytes % elementBytes == 0)
      counts.push_back(bytes / elementBytes);
  if (counts.empty())
    return error = "no size of the sweep is a whole number of elements", false;
  return true;
}

} // namespace collc::driver
