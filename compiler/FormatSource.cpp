#include "compiler/FormatSource.h"

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>

namespace collc {

std::string formatCudaSource(const std::string& source) {
  clang::format::FormatStyle style = clang::format::getLLVMStyle();
  style.ColumnLimit = 100;
  style.ReflowComments = false; // comments are written to length; keep them as written
  style.Language = clang::format::FormatStyle::LK_Cpp;
  std::vector<clang::tooling::Range> ranges{clang::tooling::Range(0, source.size())};
  clang::tooling::Replacements replacements =
      clang::format::reformat(style, source, ranges, "kernel.cu");
  llvm::Expected<std::string> formatted =
      clang::tooling::applyAllReplacements(source, replacements);
  if (!formatted) {
    llvm::consumeError(formatted.takeError());
    return source;
  }
  return *formatted;
}

} // namespace collc
