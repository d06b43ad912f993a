// The fixed variants `collc bench --dispatch` compares dispatch with: the distinct variants of the
// rows a dispatch plan reads from a tuning table, selected as the tuner selects its finalists.
#ifndef COLLC_TOOLS_TUNE_TABLEVARIANTS_H
#define COLLC_TOOLS_TUNE_TABLEVARIANTS_H

#include "runtime/DispatchPlan.h"
#include "runtime/TuningTable.h"

#include <vector>

namespace collc {

/// Which of a table's variants tableVariants returns.
enum class TableVariants {
  All,       // every distinct variant with a finite time
  EverySize, // only those with a finite time at every size the rows were measured at (the
             // finalists `collc tune` cross-checks, where one tune made the whole table)
  Finalists, // those of EverySize, and at each size the two fastest (tuneFinalists, as collc
             // tune picks them): a table tuned in pieces (1K..4M, then 16M..64M) has each
             // piece's winners timed only within their piece
};

/// The distinct variants with a finite time among the rows tablePlan would read for `query`, in
/// the order of the file, as `which` selects: the fixed variants `collc bench --dispatch`
/// compares dispatch with.
std::vector<TunedVariant> tableVariants(const TuningTable& table, const DispatchQuery& query,
                                        TableVariants which = TableVariants::All);

} // namespace collc

#endif // COLLC_TOOLS_TUNE_TABLEVARIANTS_H
