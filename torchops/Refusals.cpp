#include "torchops/Refusals.h"

#include "torchops/Errors.h"

namespace collc::torchops {
namespace {

bool splitsPerRank(const char* kind) {
  const std::string k = kind;
  return k == "reducescatter" || k == "alltoall";
}

/// The refusal's reason, as Communicator._refusal words it; empty where collc takes `t`.
std::string refusal(const Communicator& comm, const at::Tensor& t, const char* kind) {
  if (!t.is_cuda() || t.get_device() != comm.device)
    return "a tensor on " + t.device().str() +
           "; this communicator runs on cuda:" + std::to_string(comm.device);
  if (!collcDtype(t))
    return "dtype " + pythonDtype(t) + "; collc takes float32, float16 and bfloat16";
  if (!t.is_contiguous())
    return "a non-contiguous tensor";
  if (reinterpret_cast<uintptr_t>(t.data_ptr()) % 16)
    return "a tensor whose data is not 16-byte aligned";
  const int64_t numel = t.numel();
  const int64_t perRank = splitsPerRank(kind) ? numel / comm.nranks : numel;
  const uint64_t bytes = uint64_t(perRank) * uint64_t(t.element_size());
  if (bytes > comm.maxBytes)
    return std::to_string(bytes) + " bytes per call; this communicator was made for at most " +
           std::to_string(comm.maxBytes) + " (max_bytes)";
  if (splitsPerRank(kind) && numel % comm.nranks)
    return std::to_string(numel) + " elements do not split into " + std::to_string(comm.nranks) +
           " equal parts";
  return {};
}

} // namespace

const char* collcDtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
  case at::kFloat:
    return "float32";
  case at::kHalf:
    return "float16";
  case at::kBFloat16:
    return "bfloat16";
  default:
    return nullptr;
  }
}

std::string pythonDtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
  case at::kFloat:
    return "torch.float32";
  case at::kHalf:
    return "torch.float16";
  case at::kBFloat16:
    return "torch.bfloat16";
  case at::kDouble:
    return "torch.float64";
  case at::kLong:
    return "torch.int64";
  case at::kInt:
    return "torch.int32";
  case at::kShort:
    return "torch.int16";
  case at::kChar:
    return "torch.int8";
  case at::kByte:
    return "torch.uint8";
  case at::kBool:
    return "torch.bool";
  case at::kComplexFloat:
    return "torch.complex64";
  case at::kComplexDouble:
    return "torch.complex128";
  default:
    return std::string("torch.") + c10::toString(t.scalar_type());
  }
}

void checkTensor(const Communicator& comm, const at::Tensor& t, const char* kind) {
  const std::string why = refusal(comm, t, kind);
  if (!why.empty())
    raise(std::string("collc cannot take this tensor for ") + kind + ": " + why +
          " (fall back to NCCL; should_use() tells beforehand)");
}

void checkOp(c10::string_view op) {
  if (op != "sum" && op != "max" && op != "min")
    raise("unknown op '" + std::string(op) + "': use 'sum', 'max' or 'min'");
}

void checkRoot(const Communicator& comm, int64_t root) {
  if (root < 0 || root >= comm.nranks)
    raise("root " + std::to_string(root) + ": a rank of 0.." + std::to_string(comm.nranks - 1));
}

void checkRmsNorm(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                  double eps) {
  const std::pair<const at::Tensor*, const char*> aux[] = {{&residual, "residual"},
                                                           {&weight, "weight"}};
  for (const auto& [t, what] : aux)
    if (t->scalar_type() != x.scalar_type() || !t->is_contiguous() || t->device() != x.device())
      raise(std::string(what) + " must be a contiguous " + pythonDtype(x) + " tensor on " +
            x.device().str());
  const int64_t hidden = weight.numel();
  if (residual.numel() != x.numel() || hidden == 0 || x.numel() % hidden)
    raise("x and residual must hold the same whole rows of weight.numel() = " +
          std::to_string(hidden) + " elements (x: " + std::to_string(x.numel()) +
          ", residual: " + std::to_string(residual.numel()) + ")");
  if (eps != 1e-6)
    raise("this version compiles rmsnorm with eps = 1e-6 only");
}

} // namespace collc::torchops
