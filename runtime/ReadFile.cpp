#include "runtime/ReadFile.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace collc {

std::optional<std::string> readWholeFile(const std::string& path, std::error_code* error) {
  auto fail = [error]() -> std::optional<std::string> {
    if (error)
      *error = std::error_code(errno, std::generic_category());
    return std::nullopt;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail();
  std::string contents;
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      std::optional<std::string> failed = fail();
      ::close(fd);
      return failed;
    }
    if (got == 0)
      break;
    contents.append(buffer, size_t(got));
  }
  ::close(fd);
  return contents;
}

} // namespace collc
