// Device helpers of steps split by rows (RowEpilogue.h): the block-wide sum a row-wise statement
// reduces its row with. Printed into the kernel only when some step is split by rows.
#ifndef COLLC_COMPILER_ROWPRELUDE_H
#define COLLC_COMPILER_ROWPRELUDE_H

namespace collc {

/// Needs kThreads (a multiple of 32) defined before it.
extern const char* const kRowPrelude;

} // namespace collc

#endif // COLLC_COMPILER_ROWPRELUDE_H
