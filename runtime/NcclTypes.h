// collc's element types and reduction operators as NCCL names them: what the NCCL baseline and
// the NCCL path of a process-per-GPU world (CollectiveInstance::createNccl) hand to NCCL's calls
// (NcclLibrary::enqueue).
#ifndef COLLC_RUNTIME_NCCLTYPES_H
#define COLLC_RUNTIME_NCCLTYPES_H

#include "abi/Types.h"

#include <nccl.h>

namespace collc {

inline ncclDataType_t ncclTypeOf(DType type) {
  switch (type) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  }
  return ncclFloat32;
}

inline ncclRedOp_t ncclOpOf(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  }
  return ncclSum;
}

} // namespace collc

#endif // COLLC_RUNTIME_NCCLTYPES_H
