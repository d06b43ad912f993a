// The probes' kernels as CUDA text, on the collc_params ABI (prepend kernelAbiHeader() to
// compile them): sol_empty, sol_exchange, sol_exchange_read, sol_copy, sol_copy_signal and
// sol_copy_sentinel.
#ifndef COLLC_RUNTIME_SPEEDOFLIGHTKERNELS_H
#define COLLC_RUNTIME_SPEEDOFLIGHTKERNELS_H

namespace collc {

const char* speedOfLightKernelText();

} // namespace collc

#endif // COLLC_RUNTIME_SPEEDOFLIGHTKERNELS_H
