#include "compiler/DevicePrelude.h"

#include "dsl/Diagnostics.h"

namespace collc {
namespace embedded {
const std::vector<std::pair<std::string_view, std::string_view>>& deviceFiles();
}

const std::vector<std::pair<std::string_view, std::string_view>>& deviceFiles() {
  return embedded::deviceFiles();
}

std::string deviceFile(std::string_view name) {
  for (const auto& [file, text] : embedded::deviceFiles())
    if (file == name)
      return "\n// compiler/device/" + std::string(file) + "\n" + std::string(text);
  internalError("no device file '" + std::string(name) + "' is embedded");
}

std::string_view elementFile(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "element_f32.cuh";
  case DType::F16:
    return "element_f16.cuh";
  case DType::BF16:
    return "element_bf16.cuh";
  }
  internalError("no element file for this type");
}

std::string_view combineFile(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "combine_sum.cuh";
  case ReduceOp::Max:
    return "combine_max.cuh";
  case ReduceOp::Min:
    return "combine_min.cuh";
  }
  internalError("no combine file for this operator");
}

} // namespace collc
