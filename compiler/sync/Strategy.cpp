#include "compiler/sync/Strategy.h"

namespace collc {

// Every strategy, defined in its own file of compiler/sync/.
const SyncStrategy& barrierStrategy();
const SyncStrategy& llStrategy();
const SyncStrategy& sentinelStrategy();
const SyncStrategy& ll128Strategy();
const SyncStrategy& ll128AtomicStrategy();

const SyncStrategy& syncStrategy(SyncKind kind) {
  switch (kind) {
  case SyncKind::Barrier:
    return barrierStrategy();
  case SyncKind::LL:
    return llStrategy();
  case SyncKind::Sentinel:
    return sentinelStrategy();
  case SyncKind::LL128:
    return ll128Strategy();
  case SyncKind::LL128Atomic:
    return ll128AtomicStrategy();
  }
  internalError("unknown sync strategy");
}

} // namespace collc
