// How the runtime reports failure: collc::Error and collc::Expected, defined with the vocabulary
// both the compiler and the runtime share (abi/Status.h), so that the compiler's API returns them
// too. Applications include this one (docs/api.md).
#ifndef COLLC_RUNTIME_STATUS_H
#define COLLC_RUNTIME_STATUS_H

#include "abi/Status.h"

#endif // COLLC_RUNTIME_STATUS_H
