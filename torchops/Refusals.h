// The checks of collc.torch's Python path, with its messages word for word, so that a call is
// refused the same way whichever path runs it (python/collc/torch.py: Communicator._refusal,
// _check_op, _check_root and the fused op's checks).
#pragma once

#include "torchops/Communicators.h"

#include <ATen/core/Tensor.h>
#include <string>

namespace collc::torchops {

/// collc's name of a tensor's element type ("bfloat16"), or null for one collc does not take.
const char* collcDtype(const at::Tensor& t);
/// The Python spelling of a tensor's dtype ("torch.bfloat16").
std::string pythonDtype(const at::Tensor& t);

/// Raises collc.Error's message unless collc takes `t` for `kind` on this communicator.
void checkTensor(const Communicator& comm, const at::Tensor& t, const char* kind);
void checkOp(c10::string_view op);
void checkRoot(const Communicator& comm, int64_t root);
/// The fused add + RMSNorm's residual and weight, and its eps.
void checkRmsNorm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                  double eps);

} // namespace collc::torchops
