#include "runtime/Rendezvous.h"

#include "runtime/TextParsing.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace collc {

namespace {

using Clock = std::chrono::steady_clock;

// What rank 0 publishes: one header line, then the payload's bytes.
//   "collc-rendezvous 1 nranks=<N> bytes=<B>\n"
constexpr const char* kHeaderWord = "collc-rendezvous";
constexpr int kFormatVersion = 1;
// A client's hello on a tcp rendezvous: magic, then its rank count and rank (int32 each).
constexpr char kHelloMagic[4] = {'c', 'r', 'd', '1'};
constexpr auto kPollInterval = std::chrono::milliseconds(20);

Error rendezvousError(const RendezvousAddress& address, const std::string& message) {
  return makeError("rendezvous " + address.text + ": " + message);
}

std::string systemError() {
  return std::strerror(errno);
}

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int millisecondsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

std::string encode(int nranks, std::string_view payload) {
  return std::string(kHeaderWord) + " " + std::to_string(kFormatVersion) +
         " nranks=" + std::to_string(nranks) + " bytes=" + std::to_string(payload.size()) + "\n" +
         std::string(payload);
}

/// Parses what rank 0 published. `complete` is false while more bytes are still to come.
Expected<std::string> decode(const RendezvousAddress& address, const std::string& data, int nranks,
                             bool& complete) {
  complete = false;
  const size_t newline = data.find('\n');
  if (newline == std::string::npos)
    return std::string();
  std::istringstream header(data.substr(0, newline));
  std::string word, ranksField, bytesField;
  int version = 0;
  header >> word >> version >> ranksField >> bytesField;
  int published = 0;
  size_t bytes = 0;
  if (word != kHeaderWord || version != kFormatVersion ||
      std::sscanf(ranksField.c_str(), "nranks=%d", &published) != 1 ||
      std::sscanf(bytesField.c_str(), "bytes=%zu", &bytes) != 1)
    return rendezvousError(address, "holds something that is not a collc rendezvous (header '" +
                                        data.substr(0, std::min<size_t>(newline, 80)) + "')");
  if (published != nranks)
    return rendezvousError(address, "rank 0 published for " + std::to_string(published) +
                                        " ranks, but this process is one of " +
                                        std::to_string(nranks) +
                                        " (a different WORLD_SIZE, or another job's rendezvous)");
  if (data.size() < newline + 1 + bytes)
    return std::string();
  complete = true;
  return data.substr(newline + 1, bytes);
}

/// Wall-clock seconds at which this process started (from /proc), or now if unknown.
double processStartWallSeconds() {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::ifstream statFile("/proc/self/stat"), systemStat("/proc/stat");
  std::string text;
  if (!statFile || !std::getline(statFile, text))
    return now;
  const size_t close = text.rfind(')');
  std::istringstream fields(close == std::string::npos ? "" : text.substr(close + 1));
  std::string field;
  unsigned long long startTicks = 0;
  for (int index = 3; fields >> field; ++index)
    if (index == 22) {
      startTicks = std::strtoull(field.c_str(), nullptr, 10);
      break;
    }
  unsigned long long bootTime = 0;
  for (std::string line; std::getline(systemStat, line);)
    if (line.rfind("btime ", 0) == 0)
      bootTime = std::strtoull(line.c_str() + 6, nullptr, 10);
  const long ticksPerSecond = sysconf(_SC_CLK_TCK);
  if (startTicks == 0 || bootTime == 0 || ticksPerSecond <= 0)
    return now;
  return double(bootTime) + double(startTicks) / double(ticksPerSecond);
}

// ---- file ----------------------------------------------------------------------------------

Error publishFile(const RendezvousAddress& address, int nranks, std::string_view payload) {
  const std::string temporary = address.path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return rendezvousError(address, "cannot write " + temporary + ": " + systemError());
    const std::string data = encode(nranks, payload);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      const std::string why = systemError();
      std::remove(temporary.c_str());
      return rendezvousError(address, "writing " + temporary + " failed: " + why);
    }
  }
  // rename() replaces atomically: a reader sees the old file or the whole new one.
  if (std::rename(temporary.c_str(), address.path.c_str()) != 0) {
    const std::string why = systemError();
    std::remove(temporary.c_str());
    return rendezvousError(address, "cannot rename " + temporary + " into place: " + why);
  }
  return Error::success();
}

Expected<std::string> readFile(const RendezvousAddress& address, int nranks,
                               double timeoutSeconds) {
  const Clock::time_point deadline = deadlineIn(timeoutSeconds);
  const double notBefore = processStartWallSeconds() - kStaleFileSlackSeconds;
  bool sawStale = false;
  for (;;) {
    struct stat info;
    if (stat(address.path.c_str(), &info) == 0) {
      const double modified = double(info.st_mtim.tv_sec) + info.st_mtim.tv_nsec * 1e-9;
      if (modified < notBefore) {
        sawStale = true;
      } else {
        std::ifstream in(address.path, std::ios::binary);
        std::stringstream data;
        data << in.rdbuf();
        bool complete = false;
        Expected<std::string> payload = decode(address, data.str(), nranks, complete);
        if (!payload || complete)
          return payload;
      }
    }
    if (Clock::now() >= deadline)
      return rendezvousError(
          address, "rank 0 did not publish within " + std::to_string(int(timeoutSeconds)) + " s" +
                       (sawStale ? " (the file there is older than this process: left over "
                                   "from an earlier job)"
                                 : "") +
                       "; is rank 0 running, with the same COLLC_RENDEZVOUS?");
    std::this_thread::sleep_for(kPollInterval);
  }
}

// ---- tcp -----------------------------------------------------------------------------------

/// A socket closed when the object goes.
struct Socket {
  int fd = -1;
  explicit Socket(int fd_ = -1) : fd(fd_) {}
  Socket(Socket&& other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket& operator=(Socket&& other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd >= 0)
      close(fd);
  }
};

Expected<struct addrinfo*> resolve(const RendezvousAddress& address, bool passive) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  struct addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (int status = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); status != 0)
    return rendezvousError(address,
                           "cannot resolve '" + address.host + "': " + gai_strerror(status));
  return found;
}

/// Sends all of `data`, bounded by `deadline`.
bool sendAll(int fd, const std::string& data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    struct pollfd p {
      fd, POLLOUT, 0
    };
    if (poll(&p, 1, millisecondsLeft(deadline)) <= 0)
      return false;
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return false;
    sent += size_t(n);
  }
  return true;
}

/// Reads until `want` bytes are there (or, with want 0, until the peer closes), bounded.
bool receive(int fd, std::string& data, size_t want, Clock::time_point deadline) {
  char buffer[4096];
  while (want == 0 || data.size() < want) {
    struct pollfd p {
      fd, POLLIN, 0
    };
    if (poll(&p, 1, millisecondsLeft(deadline)) <= 0)
      return false;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return want == 0;
    data.append(buffer, size_t(n));
  }
  return true;
}

Error serveTcp(const RendezvousAddress& address, int nranks, std::string_view payload,
               double timeoutSeconds) {
  const Clock::time_point deadline = deadlineIn(timeoutSeconds);
  Expected<struct addrinfo*> found = resolve(address, /*passive=*/true);
  if (!found)
    return found.takeError();
  Socket listener;
  std::string why = "no usable address";
  for (struct addrinfo* a = *found; a; a = a->ai_next) {
    Socket candidate(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (candidate.fd < 0) {
      why = systemError();
      continue;
    }
    int on = 1;
    setsockopt(candidate.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(candidate.fd, a->ai_addr, a->ai_addrlen) != 0 || listen(candidate.fd, 64) != 0) {
      why = systemError();
      continue;
    }
    listener = std::move(candidate);
    break;
  }
  freeaddrinfo(*found);
  if (listener.fd < 0)
    return rendezvousError(address, "rank 0 cannot listen there: " + why);

  const std::string published = encode(nranks, payload);
  std::set<int> served;
  while (int(served.size()) < nranks - 1) {
    struct pollfd p {
      listener.fd, POLLIN, 0
    };
    int ready = poll(&p, 1, millisecondsLeft(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
      std::string missing;
      for (int r = 1; r < nranks; ++r)
        if (!served.count(r))
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      return rendezvousError(address, "rank(s) " + missing + " did not connect within " +
                                          std::to_string(int(timeoutSeconds)) + " s");
    }
    Socket client(accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (client.fd < 0)
      continue;
    std::string hello;
    if (!receive(client.fd, hello, sizeof kHelloMagic + 8, deadline) ||
        std::memcmp(hello.data(), kHelloMagic, sizeof kHelloMagic) != 0)
      continue; // not one of ours (a port scan, a health check): ignore it
    int32_t theirRanks = 0, theirRank = 0;
    std::memcpy(&theirRanks, hello.data() + 4, 4);
    std::memcpy(&theirRank, hello.data() + 8, 4);
    // Answered either way: a client of another rank count reports the mismatch itself.
    (void)sendAll(client.fd, published, deadline);
    if (theirRanks != nranks)
      return rendezvousError(address, "rank " + std::to_string(theirRank) +
                                          " connected as one of " + std::to_string(theirRanks) +
                                          " ranks; rank 0 has " + std::to_string(nranks));
    if (theirRank < 1 || theirRank >= nranks)
      return rendezvousError(address, "a client says it is rank " + std::to_string(theirRank) +
                                          " of " + std::to_string(nranks));
    if (!served.insert(theirRank).second)
      return rendezvousError(address, "rank " + std::to_string(theirRank) +
                                          " connected twice: two processes have the same RANK");
  }
  return Error::success();
}

Expected<std::string> askTcp(const RendezvousAddress& address, int rank, int nranks,
                             double timeoutSeconds) {
  const Clock::time_point deadline = deadlineIn(timeoutSeconds);
  std::string lastError = "not tried";
  for (;;) {
    Expected<struct addrinfo*> found = resolve(address, /*passive=*/false);
    if (!found)
      return found.takeError();
    Socket connection;
    for (struct addrinfo* a = *found; a && connection.fd < 0; a = a->ai_next) {
      Socket candidate(
          socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (candidate.fd < 0) {
        lastError = systemError();
        continue;
      }
      if (connect(candidate.fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
          lastError = systemError();
          continue;
        }
        struct pollfd p {
          candidate.fd, POLLOUT, 0
        };
        int soError = 0;
        socklen_t length = sizeof soError;
        if (poll(&p, 1, std::min(millisecondsLeft(deadline), 1000)) <= 0 ||
            getsockopt(candidate.fd, SOL_SOCKET, SO_ERROR, &soError, &length) != 0 ||
            soError != 0) {
          lastError = soError ? std::strerror(soError) : "connect timed out";
          continue;
        }
      }
      connection = std::move(candidate);
    }
    freeaddrinfo(*found);
    if (connection.fd >= 0) {
      std::string hello(kHelloMagic, sizeof kHelloMagic);
      int32_t fields[2] = {nranks, rank};
      hello.append(reinterpret_cast<const char*>(fields), sizeof fields);
      std::string answer;
      if (sendAll(connection.fd, hello, deadline) && receive(connection.fd, answer, 0, deadline)) {
        bool complete = false;
        Expected<std::string> payload = decode(address, answer, nranks, complete);
        if (!payload || complete)
          return payload;
        lastError = "rank 0 closed the connection before sending everything";
      } else {
        lastError = "no answer from rank 0";
      }
    }
    if (Clock::now() >= deadline)
      return rendezvousError(address, "could not get the id from rank 0 within " +
                                          std::to_string(int(timeoutSeconds)) + " s (last: " +
                                          lastError + "); is rank 0 running, listening there?");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

} // namespace

Expected<RendezvousAddress> parseRendezvous(std::string_view text) {
  RendezvousAddress address;
  address.text = std::string(text);
  auto bad = [&](const std::string& why) {
    return makeError("COLLC_RENDEZVOUS='" + address.text + "': " + why +
                     "; expected file:/ABSOLUTE/PATH or tcp:HOST:PORT");
  };
  auto consumeFront = [&text](std::string_view prefix) {
    if (text.substr(0, prefix.size()) != prefix)
      return false;
    text.remove_prefix(prefix.size());
    return true;
  };
  if (consumeFront("file:")) {
    if (text.substr(0, 1) != "/")
      return bad("the path must be absolute (every rank resolves it alike)");
    address.kind = RendezvousAddress::Kind::File;
    address.path = std::string(text);
    return address;
  }
  if (consumeFront("tcp:")) {
    consumeFront("//");
    std::string_view host, port;
    if (text.substr(0, 1) == "[") {
      size_t close = text.find(']');
      if (close == std::string_view::npos || text.substr(close + 1, 1) != ":")
        return bad("an IPv6 host is written [ADDRESS]:PORT");
      host = text.substr(1, close - 1);
      port = text.substr(close + 2);
    } else {
      size_t colon = text.rfind(':');
      if (colon == std::string_view::npos || colon + 1 == text.size())
        return bad("no port");
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
    if (host.empty())
      return bad("no host");
    std::optional<unsigned> value = parseDecimal<unsigned>(port);
    if (!value || *value == 0 || *value > 65535)
      return bad("port '" + std::string(port) + "' is not a number in 1..65535");
    address.kind = RendezvousAddress::Kind::Tcp;
    address.host = std::string(host);
    address.port = static_cast<uint16_t>(*value);
    return address;
  }
  return bad("unknown kind");
}

Expected<std::string> shareFromRankZero(const RendezvousAddress& address, int rank, int nranks,
                                        std::string_view payload, double timeoutSeconds) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return rendezvousError(address,
                           "rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  if (nranks == 1)
    return std::string(payload);
  if (address.kind == RendezvousAddress::Kind::File) {
    if (rank == 0) {
      if (Error err = publishFile(address, nranks, payload))
        return err;
      return std::string(payload);
    }
    return readFile(address, nranks, timeoutSeconds);
  }
  if (rank == 0) {
    if (Error err = serveTcp(address, nranks, payload, timeoutSeconds))
      return err;
    return std::string(payload);
  }
  return askTcp(address, rank, nranks, timeoutSeconds);
}

void cleanUpRendezvous(const RendezvousAddress& address) {
  if (address.kind == RendezvousAddress::Kind::File)
    (void)std::remove(address.path.c_str());
}

} // namespace collc
