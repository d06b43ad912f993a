#include "tools/collc/Commands.h"
#include "tools/collc/Footprint.h"

#include <algorithm>
#include <iostream>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>
#include <map>

namespace collc::driver {

const Command kCheckCommand{
    "check",
    "check SPEC",
    "Parse, check and verify a spec for every rank count it declares. SPEC is a path or the name\n"
    "of a standard spec (see 'collc list'). Diagnostics go to stderr as file:line:col: error: ...",
    "The verifier runs the spec's data flow for every rank count it declares, every root and\n"
    "every count n (n symbolic, in ranges of residues), and proves the collective's "
    "postcondition,\n"
    "the ordering of every read after the write it depends on, the absence of races, and that\n"
    "scratch is written before it is read (what is and is not proved: dsl/README.md). The spec's\n"
    "own sync strategy is then lowered for every rank count and element type (f32, f16, bf16)\n"
    "and each lowered program checked the same way, so a strategy it cannot use is refused at its\n"
    "'sync' clause. The report says how many runs the proof took, the types it lowered, and which\n"
    "buffers the caller may pass as one.\n"
    "\n"
    "--footprint then prints the symmetric heap per rank that each sync strategy's variant takes\n"
    "(scratch copies and flags, as the runtime lays them out) for calls of up to --count elements\n"
    "of --dtype, at every rank count the spec declares (or those --ranks lists): what a world\n"
    "must hold for it.\n",
    {{"footprint", "", "also print each strategy's symmetric heap per rank and rank count"},
     {"count", "N", "with --footprint: the largest call, in elements (K/M/G suffixes; default 1M)"},
     {"dtype", "T", "with --footprint: " + nameList<DType>() + " (default bf16)"},
     {"ranks", "LIST", "with --footprint: the rank counts to print, e.g. 16,32,72 (default all)"},
     {"work-limit", "N",
      "steps of work the spec's proof may take, and as much again its own strategy's programs "
      "and the report's (K/M/G suffixes, powers of 1024; default 50000000)"}},
    1};

namespace {

void printFootprint(const SpecSource& spec, const std::vector<int>& rankCounts, uint64_t count,
                    DType dtype) {
  const auto rows = footprint(spec, rankCounts, count, dtype);
  llvm::outs() << "symmetric heap per rank for calls of up to " << count << " elements of "
               << name(dtype) << " (" << formatBytes(count * sizeOf(dtype)) << "):\n";
  llvm::outs() << "  ranks ";
  for (const FootprintCell& cell : rows.front().cells)
    llvm::outs() << llvm::format("%14s", std::string(name(cell.sync)).c_str());
  llvm::outs() << "\n";
  std::map<std::string, std::string> refusals; // "strategy refused": why, once each
  for (const FootprintRow& row : rows) {
    llvm::outs() << llvm::format("  %-6d", row.nranks);
    for (const FootprintCell& cell : row.cells) {
      const bool tooLarge = !cell.tooLarge.empty();
      llvm::outs() << llvm::format("%14s", cell.bytes ? formatBytes(*cell.bytes).c_str()
                                           : tooLarge ? "too large"
                                                      : "refused");
      if (!cell.bytes)
        refusals.emplace(std::string(name(cell.sync)) + (tooLarge ? " too large" : " refused"),
                         tooLarge ? cell.tooLarge : cell.refused);
    }
    llvm::outs() << "\n";
  }
  for (const auto& [what, why] : refusals)
    llvm::outs() << "  " << what << ": " << why << "\n";
}

/// "2..8", "2, 4, 5..8": rank counts, runs of consecutive ones shortened.
std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]) +
            (j > i ? ".." + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return text;
}

/// Per strategy: whether it lowers the spec, and which pairs of buffers its variants allow to be
/// one memory (a variant allows what its own lowered program does, which the runtime enforces).
void printStrategies(const CheckReport& report) {
  std::vector<int> all;
  for (int r = report.minRanks; r <= report.maxRanks; ++r)
    all.push_back(r);
  llvm::outs() << "  strategies (f32, sum, the spec's launch shape):\n";
  for (const StrategyReport& strategy : report.strategies) {
    llvm::outs() << llvm::format("    %-13s", std::string(name(strategy.sync)).c_str());
    if (strategy.notTriedFrom == report.minRanks) {
      llvm::outs() << "not tried: " << strategy.refused << "\n";
      continue;
    }
    if (strategy.notTriedFrom > report.minRanks) {
      llvm::outs() << "lowers for nranks " << report.minRanks << ".." << strategy.notTriedFrom - 1
                   << ", not tried from " << strategy.notTriedFrom << ": " << strategy.refused
                   << "\n";
      continue;
    }
    if (!strategy.refused.empty()) {
      llvm::outs() << "refused (" << strategy.refused << ")\n";
      continue;
    }
    llvm::outs() << "lowers for nranks " << rankList(all);
    for (const AliasReport& alias : strategy.aliases) {
      llvm::outs() << "; "
                   << (alias.inPlace ? "in place"
                                     : "'" + alias.written + "' as '" + alias.read + "'")
                   << ": ";
      if (alias.allowedRanks.size() == all.size()) {
        llvm::outs() << "allowed";
      } else {
        std::vector<std::string> parts;
        if (!alias.allowedRanks.empty())
          parts.push_back("allowed for nranks " + rankList(alias.allowedRanks));
        if (!alias.why.empty())
          parts.push_back(std::string(alias.allowedRanks.empty() ? "not allowed (" : "not (") +
                          alias.why + ")");
        if (alias.notProvedFrom != 0)
          parts.push_back("not proved from nranks " + std::to_string(alias.notProvedFrom) +
                          ": check's budget of work ran out");
        llvm::outs() << llvm::join(parts, ", ");
      }
    }
    const auto usable = std::count_if(strategy.aliases.begin(), strategy.aliases.end(),
                                      [](const AliasReport& a) { return !a.allowedRanks.empty(); });
    if (usable > 1)
      llvm::outs() << "; all at once: " << (strategy.aliasesTogether ? "allowed" : "not allowed");
    llvm::outs() << "\n";
  }
  llvm::outs() << "  lowered programs: " << report.loweredWork << " steps of work; check took "
               << llvm::format("%.2f", report.totalSeconds) << " s\n";
}

} // namespace

int runCheck(const ParsedArguments& args) {
  if (!args.has("footprint") && (args.has("count") || args.has("dtype") || args.has("ranks")))
    return usageError("--count, --dtype and --ranks go with --footprint");
  uint64_t count = 1 << 20;
  if (auto text = args.get("count")) {
    auto parsed = parseSize(*text);
    if (!parsed || *parsed == 0)
      return usageError("--count=" + *text + " is not a positive count (K/M/G suffixes allowed)");
    count = *parsed;
  }
  DType dtype = DType::BF16;
  if (auto text = args.get("dtype")) {
    auto parsed = parseDType(*text);
    if (!parsed)
      return usageError("--dtype=" + *text + " is not " + nameList<DType>());
    dtype = *parsed;
  }
  int64_t workLimit = 0;
  if (std::string error; !parseWorkLimit(args, workLimit, error))
    return usageError(error);
  auto spec = loadSpec(args.positionals()[0]);
  if (!spec)
    return reportError(spec.takeError());
  CheckReport report;
  if (Error error = checkSpec(*spec, std::cerr, &report, CheckDepth::EveryStrategy, workLimit))
    return reportError(std::move(error));
  llvm::outs() << spec->bufferName << ": ok\n";
  llvm::outs() << "  proved for nranks " << report.minRanks << ".." << report.maxRanks
               << ", every root and every n: " << report.runs << " runs, " << report.work
               << " steps of work (limit " << report.workLimit << "), "
               << llvm::format("%.2f", report.seconds) << " s\n";
  llvm::outs() << "  lowered with its own sync strategy at every rank count for";
  for (size_t k = 0; k < report.types.size(); ++k)
    llvm::outs() << (k == 0                         ? " "
                     : k + 1 == report.types.size() ? " and "
                                                    : ", ")
                 << name(report.types[k]);
  // Every lowered program (this line's and the strategies' below) is proved across calls too.
  llvm::outs() << ", each also across consecutive calls\n";
  llvm::outs() << "  operators: "
               << (report.sumOnly.empty() ? "sum, max and min"
                                          : "sum only (" + report.sumOnly + ")")
               << "\n";
  llvm::outs() << "  in place (out is in): "
               << (report.inPlace              ? "allowed by the spec"
                   : report.inPlaceWhy.empty() ? "not allowed"
                                               : "not allowed (" + report.inPlaceWhy + ")")
               << "\n";
  for (const auto& [written, read] : report.auxAliases)
    llvm::outs() << "  '" << written << "' may be the same memory as '" << read
                 << "' by the spec\n";
  if (report.auxAliases.size() + report.inPlace > 1)
    llvm::outs() << "  all of these at once: "
                 << (report.aliasesTogether ? "allowed by the spec" : "not allowed") << "\n";
  printStrategies(report);
  if (!args.has("footprint"))
    return kSuccess;
  std::vector<int> rankCounts;
  for (int r = report.minRanks; r <= report.maxRanks; ++r)
    rankCounts.push_back(r);
  if (auto text = args.get("ranks")) {
    Expected<std::vector<int>> parsed =
        parseFootprintRanks(*text, report.minRanks, report.maxRanks);
    if (!parsed)
      return reportError(parsed.takeError());
    rankCounts = std::move(*parsed);
  }
  printFootprint(*spec, rankCounts, count, dtype);
  return kSuccess;
}

} // namespace collc::driver
