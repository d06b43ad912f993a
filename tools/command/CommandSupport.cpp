#include "tools/command/CommandSupport.h"

#include <cstdlib>
#include <ctime>
#include <llvm/Support/raw_ostream.h>

namespace collc::driver {

std::vector<OptionSpec> variantOptions() {
  return {
      {"ranks", "R", "rank count to compile for (default 2; run: the GPU count)"},
      {"dtype", "T", "element type: " + nameList<DType>() + " (default f32)"},
      {"op", "O", "reduction: " + nameList<ReduceOp>() + " (default sum)"},
      {"root", "R", "root rank of a broadcast or reduce (default 0), compiled into the kernel"},
      {"hidden", "H", "row length of a spec with rows (e.g. the hidden size of allreduce_rmsnorm)"},
      {"eps", "E", "rmsnorm's epsilon (default 1e-6)"},
      {"sync", "S", "sync strategy, overriding the spec's: " + nameList<SyncKind>(", ")},
      {"blocks", "B", "thread blocks per rank (default: the spec's launch)"},
      {"threads", "N", "threads per block"},
      {"vector", "BYTES", "bytes per memory operation: 2, 4, 8 or 16"},
      {"unroll", "K", "vectors per thread per loop iteration"},
      {"whole-stores", "0|1",
       "1: store every whole vector with one instruction of its width (default: the spec's, "
       "else 0)"},
      {"no-pdl", "",
       "launch without programmatic dependent launch (no overlap with the "
       "previous kernel)"},
      {"rank-launch-entry", "",
       "also emit <kernel>_ranks, which runs every rank of a one-GPU world in one launch (what "
       "run --one-gpu uses past 32 ranks); the kernel itself is unchanged"},
      {"experimental-ll128", "",
       "compile --sync ll128 although it is disabled (it has returned wrong results; for "
       "investigation only)"},
      {"work-limit", "N",
       "steps of work the variant's proofs may take (K/M/G suffixes, powers of 1024; default "
       "50000000): a larger one proves what the default refuses as too costly (a copy of a spec "
       "that declares more ranks), in the CPU time that takes"}};
}

bool parseVariant(const ParsedArguments& args, CompileOptions& options, std::string& error,
                  bool syncMayBeAll) {
  if (auto text = args.get("dtype")) {
    auto value = parseDType(*text);
    if (!value)
      return error = "unknown --dtype '" + *text + "'; expected " + nameList<DType>(), false;
    options.dtype = *value;
  }
  if (auto text = args.get("op")) {
    auto value = parseReduceOp(*text);
    if (!value)
      return error = "unknown --op '" + *text + "'; expected " + nameList<ReduceOp>(), false;
    options.op = *value;
  }
  if (auto text = args.get("sync"); text && !(syncMayBeAll && *text == "all")) {
    auto value = parseSyncKind(*text);
    if (!value)
      return error = "unknown --sync '" + *text + "'; expected " + nameList<SyncKind>(), false;
    options.sync = *value;
  }
  struct IntOption {
    const char* name;
    std::optional<int>* target;
  };
  std::optional<int> ranks, root, hidden;
  for (IntOption o :
       {IntOption{"ranks", &ranks}, IntOption{"root", &root}, IntOption{"hidden", &hidden},
        IntOption{"blocks", &options.blocks}, IntOption{"threads", &options.threads},
        IntOption{"vector", &options.vectorBytes}, IntOption{"unroll", &options.unroll},
        IntOption{"whole-stores", &options.wholeStores}}) {
    auto text = args.get(o.name);
    if (!text)
      continue;
    auto value = parseSize(*text);
    if (!value || *value > 1000000)
      return error = std::string("--") + o.name + " takes a positive integer, not '" + *text + "'",
             false;
    *o.target = int(*value);
  }
  if (ranks)
    options.nranks = *ranks;
  if (root)
    options.root = *root;
  if (hidden)
    options.rowLength = *hidden;
  if (auto text = args.get("eps")) {
    char* end = nullptr;
    const double eps = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !(eps >= 0) || eps > 1)
      return error = "--eps takes a number in [0, 1], not '" + *text + "'", false;
    options.eps = float(eps);
  }
  if (!parseWorkLimit(args, options.verifyWorkLimit, error))
    return false;
  if (args.has("no-pdl"))
    options.programmaticLaunch = false;
  if (args.has("rank-launch-entry"))
    options.rankLaunchEntry = true;
  if (args.has("experimental-ll128"))
    options.experimentalLL128 = true;
  return true;
}

bool parseWorkLimit(const ParsedArguments& args, int64_t& limit, std::string& error) {
  auto text = args.get("work-limit");
  if (!text)
    return true;
  auto value = parseSize(*text);
  if (!value || *value == 0 || *value > uint64_t(INT64_MAX))
    return error = "--work-limit takes a positive number of steps, not '" + *text + "'", false;
  limit = int64_t(*value);
  return true;
}

int reportError(Error error) {
  llvm::errs() << (error.isSpecError() ? "collc: " : "collc: error: ") << error.message() << "\n";
  return kUserError;
}

int usageError(const std::string& message) {
  llvm::errs() << "collc: error: " << message << "\n";
  return kUserError;
}

std::string firstError(const std::string& diagnostics) {
  size_t at = diagnostics.find("error: ");
  size_t begin = at == std::string::npos ? 0 : at + 7;
  std::string line = diagnostics.substr(begin, diagnostics.find('\n', begin) - begin);
  return line.empty() ? "refused by the compiler" : line;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

} // namespace collc::driver
