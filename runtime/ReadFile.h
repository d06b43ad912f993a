// A whole file into memory, read (never mapped: a file truncated under the reader is a short read,
// not a SIGBUS).
#ifndef COLLC_RUNTIME_READFILE_H
#define COLLC_RUNTIME_READFILE_H

#include <optional>
#include <string>
#include <system_error>

namespace collc {

/// The bytes of the file at `path`; nullopt where it cannot be opened or read, with `error` (if
/// given) saying why.
std::optional<std::string> readWholeFile(const std::string& path, std::error_code* error = nullptr);

} // namespace collc

#endif // COLLC_RUNTIME_READFILE_H
