// The compiler's C++ API compiled with nothing but collc's own folders on the include path (the
// target compiler_api_without_llvm): a program that calls it needs no LLVM, of any version.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"

namespace collc {

/// Uses what a caller uses, so that the declarations are not only parsed but instantiated.
Expected<CompiledCollective> compileForCheck(std::string_view name, std::string& diagnostics) {
  Expected<SpecSource> spec = loadSpec(name);
  if (!spec)
    return spec.takeError();
  DiagnosticText out(diagnostics);
  return compileCollective(*spec, CompileOptions{}, out);
}

} // namespace collc
