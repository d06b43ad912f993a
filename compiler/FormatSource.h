// Emitted CUDA goes through clang's Format library so that it reads like code a person wrote.
#ifndef COLLC_COMPILER_FORMATSOURCE_H
#define COLLC_COMPILER_FORMATSOURCE_H

#include <string>

namespace collc {

/// The source reformatted in LLVM style (100 columns); unchanged if clang-format fails on it.
std::string formatCudaSource(const std::string& source);

} // namespace collc

#endif // COLLC_COMPILER_FORMATSOURCE_H
