// The CUDA kernels of torch.ops.collc.* in C++: the checks, the output's allocation, the stream
// rule and collc_launch, with no Python between torch's dispatcher and the launch. The schemas
// are defined by python/collc/torch.py (one definition for both paths); torch checks these
// functions' signatures against them when they register, which collc.torch asks for after loading
// the library (registerAllKernels): nothing registers while the library loads, so a mismatch is
// an error it reports, never an exception out of a static initializer. The CPU key gets the same
// kernels, so that a CPU tensor is refused with collc's message instead of the dispatcher's.
#include "torchops/Communicators.h"
#include "torchops/Errors.h"
#include "torchops/Refusals.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <collc/collc.h>
#include <cuda_runtime_api.h>
#include <memory>
#include <string>
#include <torch/library.h>
#include <tuple>

namespace collc::torchops {
namespace {

// torch's default stream is the legacy one, whose handle is 0; 0 asks collc for its world's own
// stream, so the legacy stream goes to collc_launch as cudaStreamLegacy.
void* const kLegacyStream = reinterpret_cast<void*>(cudaStreamLegacy);

/// The legacy stream is never captured, and is not asked: CUDA may refuse to look at it while
/// another stream captures.
bool capturing(void* stream) {
  if (stream == kLegacyStream)
    return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
    (void)cudaGetLastError();
    raise("cudaStreamIsCapturing failed on a stream of this communicator", "COLLC_CUDA_ERROR");
  }
  return status != cudaStreamCaptureStatusNone;
}

/// The stream rule (Communicator._order): a call on another stream than the previous call's makes
/// its stream wait for everything issued on that one so far; a graph capture begins a sequence of
/// its own. The caller holds comm.mutex.
void order(Communicator& comm, void* stream) {
  void* last = comm.lastStream;
  comm.lastStream = stream;
  if (!last || capturing(last) != capturing(stream))
    return;
  c10::cuda::CUDAGuard onDevice(static_cast<c10::DeviceIndex>(comm.device));
  cudaEvent_t event = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (err == cudaSuccess)
    err = cudaEventRecord(event, static_cast<cudaStream_t>(last));
  if (err == cudaSuccess)
    err = cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event, 0);
  if (event)
    (void)cudaEventDestroy(event); // released once the wait is done
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    raise(std::string("ordering this call after the previous one on another stream failed: ") +
              cudaGetErrorString(err),
          "COLLC_CUDA_ERROR");
  }
}

void launch(Communicator& comm, const InstanceRef& ready, const at::Tensor& in,
            const at::Tensor& out, uint64_t count, void* const* aux = nullptr, int naux = 0) {
  void* stream =
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(comm.device)).stream();
  if (!stream)
    stream = kLegacyStream;
  collc_status status;
  {
    std::lock_guard<std::mutex> lock(comm.mutex);
    if (stream != comm.lastStream)
      order(comm, stream);
    status = collc_launch(ready.handle, comm.rank, in.data_ptr(), out.data_ptr(), aux, naux, count,
                          stream);
  }
  if (status != COLLC_OK) {
    const char* message = collc_last_error();
    raise(message && *message ? message : collc_status_name(status), collc_status_name(status));
  }
}

at::Tensor allReduce(const at::Tensor& x, int64_t handle, c10::string_view op) {
  auto comm = communicator(handle);
  checkOp(op);
  checkTensor(*comm, x, "allreduce");
  at::Tensor out = at::empty_like(x);
  if (x.numel())
    launch(*comm, instance(*comm, "allreduce", collcDtype(x), std::string(op)), x, out,
           uint64_t(x.numel()));
  return out;
}

void allReduceInPlace(const at::Tensor& x, int64_t handle, c10::string_view op) {
  auto comm = communicator(handle);
  checkOp(op);
  checkTensor(*comm, x, "allreduce");
  if (!x.numel())
    return;
  const InstanceRef ready = instance(*comm, "allreduce", collcDtype(x), std::string(op));
  if (ready.inPlace) {
    launch(*comm, ready, x, x, uint64_t(x.numel()));
    return;
  }
  at::Tensor out = at::empty_like(x); // the proof does not allow it: through a copy
  launch(*comm, ready, x, out, uint64_t(x.numel()));
  const_cast<at::Tensor&>(x).copy_(out);
}

at::Tensor allGather(const at::Tensor& x, int64_t handle) {
  auto comm = communicator(handle);
  checkTensor(*comm, x, "allgather");
  at::Tensor out = at::empty({comm->nranks * x.numel()}, x.options());
  if (x.numel())
    launch(*comm, instance(*comm, "allgather", collcDtype(x), "sum"), x, out, uint64_t(x.numel()));
  return out;
}

at::Tensor reduceScatter(const at::Tensor& x, int64_t handle, c10::string_view op) {
  auto comm = communicator(handle);
  checkOp(op);
  checkTensor(*comm, x, "reducescatter");
  const int64_t count = x.numel() / comm->nranks;
  at::Tensor out = at::empty({count}, x.options());
  if (count)
    launch(*comm, instance(*comm, "reducescatter", collcDtype(x), std::string(op)), x, out,
           uint64_t(count));
  return out;
}

at::Tensor broadcast(const at::Tensor& x, int64_t handle, int64_t root) {
  auto comm = communicator(handle);
  checkRoot(*comm, root);
  checkTensor(*comm, x, "broadcast");
  at::Tensor out = at::empty_like(x);
  if (x.numel())
    launch(*comm, instance(*comm, "broadcast", collcDtype(x), "sum", root), x, out,
           uint64_t(x.numel()));
  return out;
}

at::Tensor reduce(const at::Tensor& x, int64_t handle, int64_t root, c10::string_view op) {
  auto comm = communicator(handle);
  checkOp(op);
  checkRoot(*comm, root);
  checkTensor(*comm, x, "reduce");
  at::Tensor out = at::empty_like(x);
  if (x.numel())
    launch(*comm, instance(*comm, "reduce", collcDtype(x), std::string(op), root), x, out,
           uint64_t(x.numel()));
  return out;
}

at::Tensor allToAll(const at::Tensor& x, int64_t handle) {
  auto comm = communicator(handle);
  checkTensor(*comm, x, "alltoall");
  at::Tensor out = at::empty_like(x);
  const int64_t count = x.numel() / comm->nranks;
  if (count)
    launch(*comm, instance(*comm, "alltoall", collcDtype(x), "sum"), x, out, uint64_t(count));
  return out;
}

std::tuple<at::Tensor, at::Tensor> fusedAddRmsNorm(const at::Tensor& x, const at::Tensor& residual,
                                                   const at::Tensor& weight, int64_t handle,
                                                   double eps) {
  auto comm = communicator(handle);
  checkTensor(*comm, x, "allreduce");
  checkRmsNorm(x, residual, weight, eps);
  at::Tensor out = at::empty_like(x);
  at::Tensor residualOut = at::empty_like(residual);
  if (x.numel()) {
    const InstanceRef ready = instance(*comm, "rmsnorm", collcDtype(x), "sum", 0, weight.numel());
    void* aux[] = {residual.data_ptr(), residualOut.data_ptr(), weight.data_ptr()};
    launch(*comm, ready, x, out, uint64_t(x.numel()), aux, 3);
  }
  return {out, residualOut};
}

void registerKernels(torch::Library& m) {
  m.impl("all_reduce", &allReduce);
  m.impl("all_reduce_", &allReduceInPlace);
  m.impl("all_gather", &allGather);
  m.impl("reduce_scatter", &reduceScatter);
  m.impl("broadcast", &broadcast);
  m.impl("reduce", &reduce);
  m.impl("all_to_all", &allToAll);
  m.impl("fused_add_rms_norm", &fusedAddRmsNorm);
}

} // namespace

std::string registerAllKernels() {
  // The libraries are held for the process, never destroyed: that would take the kernels back
  // out of the dispatcher, which may be gone by then at exit.
  static bool registered = false;
  if (registered)
    return {};
  auto make = [](c10::DispatchKey key) {
    return std::make_unique<torch::Library>(torch::Library::IMPL, "collc", key, __FILE__, __LINE__);
  };
  try {
    auto onCuda = make(c10::DispatchKey::CUDA);
    auto onCpu = make(c10::DispatchKey::CPU);
    registerKernels(*onCuda);
    registerKernels(*onCpu);
    (void)onCuda.release();
    (void)onCpu.release();
    registered = true;
  } catch (const std::exception& error) {
    // Whatever registered went out with the libraries above: the Python path can take over.
    return error.what();
  }
  return {};
}

} // namespace collc::torchops
