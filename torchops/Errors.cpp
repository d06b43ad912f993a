#include "torchops/Errors.h"

#include <c10/util/Exception.h>

namespace collc::torchops {

void raise(const std::string& message, const std::string& status) {
  TORCH_CHECK(false, "collc.Error(", status, "): ", message);
}

} // namespace collc::torchops
