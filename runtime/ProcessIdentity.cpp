#include "runtime/ProcessIdentity.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace collc {

bool readProcessStat(int pid, uint64_t& startTicks, char& state) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!file || !std::getline(file, text))
    return false;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos)
    return false;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // Fields from 3 (state) on; the start time is field 22.
  for (int index = 3; fields >> field; ++index) {
    if (index == 3)
      state = field.empty() ? '?' : field[0];
    if (index == 22) {
      startTicks = std::strtoull(field.c_str(), nullptr, 10);
      return true;
    }
  }
  return false;
}

ProcessIdentity thisProcessIdentity() {
  ProcessIdentity self;
  self.pid = static_cast<int>(getpid());
  char state = '?';
  if (!readProcessStat(self.pid, self.startTicks, state))
    self.startTicks = 0;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0)
    self.host = host;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  if (!boot || !std::getline(boot, self.bootId))
    self.bootId.clear();
  return self;
}

Liveness checkLiveness(const ProcessIdentity& peer) {
  if (peer.hostKey() != thisProcessIdentity().hostKey())
    return Liveness::Unknown;
  uint64_t startTicks = 0;
  char state = '?';
  if (!readProcessStat(peer.pid, startTicks, state))
    return Liveness::Gone;
  // A zombie has exited and waits for its parent; 'X' is a process being reaped.
  if (state == 'Z' || state == 'X')
    return Liveness::Gone;
  if (peer.startTicks != 0 && startTicks != peer.startTicks)
    return Liveness::Gone;
  return Liveness::Alive;
}

} // namespace collc
