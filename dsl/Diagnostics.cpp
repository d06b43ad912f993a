#include "dsl/Diagnostics.h"

namespace collc {
namespace {

/// `loc`, or no location where no buffer of `sources` holds it (a program kept after the text it
/// was parsed from is gone): SourceMgr may not be asked about such a location.
llvm::SMLoc known(const llvm::SourceMgr& sources, llvm::SMLoc loc) {
  return loc.isValid() && sources.FindBufferContainingLoc(loc) == 0 ? llvm::SMLoc() : loc;
}

} // namespace

void Diagnostics::error(llvm::SMLoc loc, const llvm::Twine& message) {
  ++errors_;
  sources_.PrintMessage(out_, known(sources_, loc), llvm::SourceMgr::DK_Error, message);
}

void Diagnostics::warning(llvm::SMLoc loc, const llvm::Twine& message) {
  sources_.PrintMessage(out_, known(sources_, loc), llvm::SourceMgr::DK_Warning, message);
}

void Diagnostics::note(llvm::SMLoc loc, const llvm::Twine& message) {
  sources_.PrintMessage(out_, known(sources_, loc), llvm::SourceMgr::DK_Note, message);
}

std::string Diagnostics::lineAndColumn(llvm::SMLoc loc) const {
  loc = known(sources_, loc);
  if (!loc.isValid())
    return "?";
  auto [line, col] = sources_.getLineAndColumn(loc);
  return std::to_string(line) + ":" + std::to_string(col);
}

void internalError(const std::string& message) {
  throw InternalError("internal compiler error: " + message);
}

} // namespace collc
