// Which variant of a collective runs at which message size: the pure half of dispatch. A plan is
// made once, from the tuning table's winners for the call site's key (runtime/TuningTable.h) or,
// where the table has none, from the built-in default rule; after that, choosing is a binary
// search over size ranges. No GPU and no compiler: the dispatcher (runtime/Dispatcher.h) compiles
// and loads the plan's variants, and its unit tests check the choices without either.
#ifndef COLLC_RUNTIME_DISPATCHPLAN_H
#define COLLC_RUNTIME_DISPATCHPLAN_H

#include "runtime/TuningTable.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collc {

/// One size range of a plan: calls with fromBytes <= bytes < toBytes run variants[variant].
struct DispatchRange {
  uint64_t fromBytes = 0;
  uint64_t toBytes = kNoUpperBound;
  size_t variant = 0;
};

struct DispatchPlan {
  /// Distinct, in order of first use from the smallest size up.
  std::vector<TunedVariant> variants;
  /// Ascending and contiguous: the first starts at 0, each starts where the one before ends, the
  /// last ends at kNoUpperBound. Never empty.
  std::vector<DispatchRange> ranges;
  /// Where the plan came from: "tuning table FILE, key ...", or "built-in default rule (...)".
  std::string source;
  bool fromTable = false;

  /// The index into `variants` of the variant for a call of `bytes` bytes per rank.
  size_t variantFor(uint64_t bytes) const;
};

/// What a call site asks of dispatch: the table key it runs under, and optionally one spec (a
/// stdlib name or path) to keep to: then only that spec's rows count, and the default rule is
/// that spec with its own sync and launch.
struct DispatchQuery {
  TuningQuery key;
  std::string spec;                  // empty: any spec of key.collective
  uint64_t maxBytes = kNoUpperBound; // the largest call; ranges above it are dropped
  int multiprocessors = 0;           // of the GPUs (0: not known, e.g. no GPU here)
  /// The rank counts a stdlib spec declares (MIN..MAX), where the caller can read them (the
  /// compiler can; the runtime alone cannot): the built-in rule then names only specs that declare
  /// key.nranks. Unset, or nullopt for a spec: taken to declare every count.
  std::function<std::optional<std::pair<int, int>>(const std::string& spec)> declaredRanks;
};

/// The built-in rule, from the 2 x H200 measurements (docs/tuning.md gives its table and why): for
/// an AllReduce, one-shot sentinel below 4 MiB, two-shot sentinel below 16 MiB, and two-shot
/// barrier from there on, with one block per multiprocessor (up to 132; 32 where the count is not
/// known); one-shot at every size where the two-shot does not declare the rank count
/// (query.declaredRanks); with a spec given, that spec alone.
DispatchPlan defaultDispatchPlan(const DispatchQuery& query);

/// The plan the table's winners make for `query`: the rows whose key matches it (of the most
/// specific matching key, the first such key in the file where several tie) and, with
/// query.spec set, whose spec is that spec. Each range runs its row marked best, else its fastest
/// finite row; a range with no finite row is left out. Gaps between ranges and the sizes below
/// the first and above the last take the variant of the nearest range below (above, for sizes
/// below the first). nullopt where no row applies; `why` then says why.
std::optional<DispatchPlan> tablePlan(const TuningTable& table, const DispatchQuery& query,
                                      std::string* why = nullptr);

/// The rows tablePlan reads for `query`: those of the most specific key that matches it (the first
/// such key in the file where several tie) and, with query.spec set, of that spec; in the order
/// of the file. Empty where no row applies.
std::vector<const TuningRow*> planRows(const TuningTable& table, const DispatchQuery& query);

/// tablePlan where it gives a plan, else defaultDispatchPlan (its source then says why).
DispatchPlan chooseDispatchPlan(const TuningTable* table, const DispatchQuery& query);

/// The plan as text, one range a line: "[0, 128K)  allreduce_oneshot/sentinel -x- v- u-".
std::string describePlan(const DispatchPlan& plan);

} // namespace collc

#endif // COLLC_RUNTIME_DISPATCHPLAN_H
