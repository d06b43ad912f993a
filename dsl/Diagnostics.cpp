#include "dsl/Diagnostics.h"

namespace collc {

void Diagnostics::error(llvm::SMLoc loc, const llvm::Twine& message) {
  ++errors_;
  sources_.PrintMessage(out_, loc, llvm::SourceMgr::DK_Error, message);
}

void Diagnostics::warning(llvm::SMLoc loc, const llvm::Twine& message) {
  sources_.PrintMessage(out_, loc, llvm::SourceMgr::DK_Warning, message);
}

void Diagnostics::note(llvm::SMLoc loc, const llvm::Twine& message) {
  sources_.PrintMessage(out_, loc, llvm::SourceMgr::DK_Note, message);
}

std::string Diagnostics::lineAndColumn(llvm::SMLoc loc) const {
  if (!loc.isValid())
    return "?";
  auto [line, col] = sources_.getLineAndColumn(loc);
  return std::to_string(line) + ":" + std::to_string(col);
}

void internalError(const std::string& message) {
  throw InternalError("internal compiler error: " + message);
}

} // namespace collc
