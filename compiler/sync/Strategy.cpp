#include "compiler/sync/Strategy.h"

namespace collc {

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
