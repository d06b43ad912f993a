#include "compiler/sync/Strategy.h"

namespace collc {

const SyncStrategy& syncStrategy(SyncKind kind) {
  switch (kind) {
    // One case per registered strategy (abi/Types.h), each in its own file of compiler/sync/.
#define COLLC_SYNC_STRATEGY_CASE(kind, spelling, cValue, experimental)                             \
  case SyncKind::kind:                                                                             \
    return syncStrategy##kind();
    COLLC_SYNC_STRATEGIES(COLLC_SYNC_STRATEGY_CASE)
#undef COLLC_SYNC_STRATEGY_CASE
  }
  internalError("unknown sync strategy");
}

} // namespace collc
