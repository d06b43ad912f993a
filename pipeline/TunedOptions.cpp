#include "pipeline/TunedOptions.h"

namespace collc {

void applyTunedVariant(const TunedVariant& variant, CompileOptions& options) {
  options.sync = variant.sync;
  options.blocks = variant.blocks;
  options.threads = variant.threads;
  options.vectorBytes = variant.vectorBytes;
  options.unroll = variant.unroll;
  options.wholeStores = variant.wholeStores;
}

} // namespace collc
