// The message sizes of a sweep, -b BEGIN -e END -f FACTOR, as the bench modes and `collc tune`
// take them.
#ifndef COLLC_TOOLS_BENCH_SWEEPOPTIONS_H
#define COLLC_TOOLS_BENCH_SWEEPOPTIONS_H

#include "tools/command/Arguments.h"

#include <cstdint>
#include <string>
#include <vector>

namespace collc::driver {

/// -b, -e, -f: the message sizes of a sweep.
std::vector<OptionSpec> sweepOptions();
/// The message sizes of a sweep, -b BEGIN -e END -f FACTOR (bytes, K/M/G allowed), as nccl-tests
/// takes them; what is not given keeps the value passed in. False with `error` set on a value that
/// is not a size, or when the sweep would be empty (`what` names the sizes in that message).
bool parseSweep(const ParsedArguments& args, uint64_t& begin, uint64_t& end, uint64_t& factor,
                const char* what, std::string& error);
/// The element counts of parseSweep's sizes (from `begin`, `end` and `factor` where an option is
/// not given) that are whole numbers of `elementBytes`; false with `error` set where parseSweep
/// fails or no size is such a number.
bool parseSweepCounts(const ParsedArguments& args, uint64_t begin, uint64_t end, uint64_t factor,
                      uint64_t elementBytes, std::vector<uint64_t>& counts, std::string& error);

} // namespace collc::driver

#endif // COLLC_TOOLS_BENCH_SWEEPOPTIONS_H
