// One place through which every user-facing message of the front end and the compiler goes.
// Messages print as `file:line:col: error: ...` followed by the source line and a caret, courtesy
// of llvm::SourceMgr; the engine counts errors so the driver can pick its exit code.
#ifndef COLLC_DSL_DIAGNOSTICS_H
#define COLLC_DSL_DIAGNOSTICS_H

#include "dsl/LibraryLocal.h"

#include <llvm/Support/SMLoc.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <stdexcept>
#include <string>

namespace collc {

class Diagnostics {
public:
  Diagnostics(llvm::SourceMgr& sources, llvm::raw_ostream& out) : sources_(sources), out_(out) {}

  COLLC_LIBRARY_LOCAL void error(llvm::SMLoc loc, const llvm::Twine& message);
  COLLC_LIBRARY_LOCAL void warning(llvm::SMLoc loc, const llvm::Twine& message);
  /// A note attaches to the error or warning before it (e.g. "declared here").
  COLLC_LIBRARY_LOCAL void note(llvm::SMLoc loc, const llvm::Twine& message);

  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  llvm::SourceMgr& sources() { return sources_; }

  /// "line:col" of a location, for messages that mention another place.
  COLLC_LIBRARY_LOCAL std::string lineAndColumn(llvm::SMLoc loc) const;

private:
  llvm::SourceMgr& sources_;
  llvm::raw_ostream& out_;
  unsigned errors_ = 0;
};

/// A bug in collc itself, not in the user's spec: the driver reports it and exits with status 2.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

[[noreturn]] void internalError(const std::string& message);

} // namespace collc

#endif // COLLC_DSL_DIAGNOSTICS_H
