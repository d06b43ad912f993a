#include "tools/tune/TableVariants.h"

#include "tools/tune/TuneSearch.h"

#include <algorithm>
#include <cmath>

namespace collc {

std::vector<TunedVariant> tableVariants(const TuningTable& table, const DispatchQuery& query,
                                        TableVariants which) {
  std::vector<TunedVariant> variants;
  std::vector<uint64_t> sizes;                 // every size the rows were measured at
  std::vector<std::vector<uint64_t>> measured; // per variant: the sizes with a finite time
  std::vector<TuneMeasurement> finite;         // the rows with a finite time, as the tuner's
  for (const TuningRow* read : planRows(table, query)) {
    const TuningRow& row = *read;
    if (std::find(sizes.begin(), sizes.end(), row.bytes) == sizes.end())
      sizes.push_back(row.bytes);
    if (!std::isfinite(row.us))
      continue;
    finite.push_back(TuneMeasurement{row.variant, row.bytes, row.us, "", false});
    auto it = std::find(variants.begin(), variants.end(), row.variant);
    if (it == variants.end()) {
      variants.push_back(row.variant);
      measured.emplace_back();
      it = variants.end() - 1;
    }
    std::vector<uint64_t>& at = measured[size_t(it - variants.begin())];
    if (std::find(at.begin(), at.end(), row.bytes) == at.end())
      at.push_back(row.bytes);
  }
  if (which == TableVariants::All)
    return variants;
  // Each size's fastest, as collc tune picks the finalists it cross-checks.
  const std::vector<TunedVariant> fastest =
      which == TableVariants::Finalists ? tuneFinalists(finite, sizes, TuneSpace{}.finalistsPerSize)
                                        : std::vector<TunedVariant>{};
  std::vector<TunedVariant> selected;
  for (size_t i = 0; i < variants.size(); ++i)
    if (measured[i].size() == sizes.size() ||
        std::find(fastest.begin(), fastest.end(), variants[i]) != fastest.end())
      selected.push_back(variants[i]);
  return selected;
}

} // namespace collc
