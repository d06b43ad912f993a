// The NCCL-id rendezvous, over a file and over a loopback socket: every rank gets rank 0's bytes,
// whichever starts first; a wrong rank count, a stale file, a missing rank 0 and bad addresses
// are errors that say so, within their deadline.
#include "runtime/Rendezvous.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <utime.h>

namespace collc {
namespace {

/// A path in a fresh directory, removed at the end of the test.
class RendezvousFile : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/collc-rendezvous-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/id";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  RendezvousAddress address() {
    Expected<RendezvousAddress> parsed = parseRendezvous("file:" + path_);
    EXPECT_TRUE(bool(parsed));
    return parsed ? *parsed : RendezvousAddress{};
  }
  std::string dir_, path_;
};

/// A loopback port nobody listens on right now.
uint16_t freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// An NCCL id is 128 arbitrary bytes: zeros and newlines included.
std::string binaryPayload() {
  std::string payload(128, '\0');
  for (size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i * 37 % 256);
  payload[5] = '\n';
  return payload;
}

/// Runs rank 0 and ranks 1..n-1 of one rendezvous on threads; readers start `readersFirstMs`
/// before rank 0 (or after it, if negative). The timeout only ends a rendezvous that fails, so it
/// is far above what a busy machine needs for one that succeeds.
std::vector<Expected<std::string>> share(const RendezvousAddress& address, int nranks,
                                         const std::string& payload, int readersFirstMs,
                                         double timeout = 120) {
  std::vector<std::future<Expected<std::string>>> futures;
  auto start = [&](int rank) {
    futures.push_back(std::async(std::launch::async, [=] {
      return shareFromRankZero(address, rank, nranks, rank == 0 ? payload : "", timeout);
    }));
  };
  if (readersFirstMs < 0) {
    start(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(-readersFirstMs));
  }
  for (int r = 1; r < nranks; ++r)
    start(r);
  if (readersFirstMs >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(readersFirstMs));
    start(0);
  }
  std::vector<Expected<std::string>> results;
  for (auto& f : futures)
    results.push_back(f.get());
  return results;
}

TEST(Rendezvous, ParsesAddresses) {
  Expected<RendezvousAddress> file = parseRendezvous("file:/shared/job7/id");
  ASSERT_TRUE(bool(file));
  EXPECT_EQ(file->kind, RendezvousAddress::Kind::File);
  EXPECT_EQ(file->path, "/shared/job7/id");
  Expected<RendezvousAddress> tcp = parseRendezvous("tcp:node0.cluster:29600");
  ASSERT_TRUE(bool(tcp));
  EXPECT_EQ(tcp->kind, RendezvousAddress::Kind::Tcp);
  EXPECT_EQ(tcp->host, "node0.cluster");
  EXPECT_EQ(tcp->port, 29600);
  Expected<RendezvousAddress> url = parseRendezvous("tcp://127.0.0.1:1234");
  ASSERT_TRUE(bool(url));
  EXPECT_EQ(url->host, "127.0.0.1");
  Expected<RendezvousAddress> v6 = parseRendezvous("tcp:[::1]:1234");
  ASSERT_TRUE(bool(v6));
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 1234);
  for (const char* bad : {"file:relative/path", "tcp:host", "tcp:host:0", "tcp:host:99999",
                          "tcp::80", "http://x", ""}) {
    Expected<RendezvousAddress> parsed = parseRendezvous(bad);
    ASSERT_FALSE(bool(parsed)) << bad;
    EXPECT_NE(toString(parsed.takeError()).find("expected file:"), std::string::npos) << bad;
  }
}

TEST_F(RendezvousFile, EveryRankGetsRankZerosBytesWhoeverStartsFirst) {
  for (int readersFirstMs : {100, -100}) {
    SCOPED_TRACE(readersFirstMs > 0 ? "readers first" : "rank 0 first");
    std::remove(path_.c_str());
    const std::string payload = binaryPayload();
    std::vector<Expected<std::string>> got = share(address(), 4, payload, readersFirstMs);
    for (size_t r = 0; r < got.size(); ++r) {
      ASSERT_TRUE(bool(got[r])) << toString(got[r].takeError());
      EXPECT_EQ(*got[r], payload) << "rank " << r;
    }
  }
  cleanUpRendezvous(address());
  struct stat info;
  EXPECT_NE(stat(path_.c_str(), &info), 0) << "clean-up removes the file";
}

TEST_F(RendezvousFile, WrongRankCountIsReported) {
  ASSERT_TRUE(bool(shareFromRankZero(address(), 0, 2, "abc", 5)));
  Expected<std::string> got = shareFromRankZero(address(), 1, 4, "", 5);
  ASSERT_FALSE(bool(got));
  EXPECT_NE(toString(got.takeError()).find("published for 2 ranks, but this process is one of 4"),
            std::string::npos);
}

TEST_F(RendezvousFile, MissingRankZeroTimesOutAndStaleFilesAreIgnored) {
  // A file from a job that ended long ago: readers must not take it.
  {
    std::ofstream old(path_);
    old << "collc-rendezvous 1 nranks=2 bytes=3\nold";
  }
  struct utimbuf times {
    0, 0
  };
  ASSERT_EQ(utime(path_.c_str(), &times), 0);
  auto start = std::chrono::steady_clock::now();
  Expected<std::string> got = shareFromRankZero(address(), 1, 2, "", 0.5);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(bool(got));
  const std::string message = toString(got.takeError());
  EXPECT_NE(message.find("did not publish within"), std::string::npos) << message;
  EXPECT_NE(message.find("earlier job"), std::string::npos) << message;
  EXPECT_LT(seconds, 60);
  // A fresh publication replaces it.
  std::vector<Expected<std::string>> fresh = share(address(), 2, "new", 50);
  ASSERT_TRUE(bool(fresh[1])) << toString(fresh[1].takeError());
  EXPECT_EQ(*fresh[1], "new");
  consumeError(fresh[0].takeError());
}

TEST_F(RendezvousFile, GarbageIsNotTakenForAnId) {
  {
    std::ofstream junk(path_);
    junk << "hello world\n";
  }
  Expected<std::string> got = shareFromRankZero(address(), 1, 2, "", 2);
  ASSERT_FALSE(bool(got));
  EXPECT_NE(toString(got.takeError()).find("not a collc rendezvous"), std::string::npos);
}

TEST(Rendezvous, TcpLoopbackWhoeverStartsFirst) {
  for (int readersFirstMs : {200, -100}) {
    SCOPED_TRACE(readersFirstMs > 0 ? "readers first" : "rank 0 first");
    Expected<RendezvousAddress> address =
        parseRendezvous("tcp:127.0.0.1:" + std::to_string(freePort()));
    ASSERT_TRUE(bool(address));
    const std::string payload = binaryPayload();
    std::vector<Expected<std::string>> got = share(*address, 3, payload, readersFirstMs);
    for (size_t r = 0; r < got.size(); ++r) {
      ASSERT_TRUE(bool(got[r])) << "rank " << r << ": " << toString(got[r].takeError());
      EXPECT_EQ(*got[r], payload) << "rank " << r;
    }
  }
}

TEST(Rendezvous, TcpRankZeroReportsMissingRanksAndMismatches) {
  Expected<RendezvousAddress> address =
      parseRendezvous("tcp:127.0.0.1:" + std::to_string(freePort()));
  ASSERT_TRUE(bool(address));
  // Nobody else comes: rank 0 names the ranks it waited for.
  Expected<std::string> alone = shareFromRankZero(*address, 0, 3, "id", 0.5);
  ASSERT_FALSE(bool(alone));
  EXPECT_NE(toString(alone.takeError()).find("rank(s) 1, 2 did not connect"), std::string::npos);
  // A client that believes in another world size: both sides say so.
  auto server =
      std::async(std::launch::async, [&] { return shareFromRankZero(*address, 0, 2, "id", 120); });
  Expected<std::string> client = shareFromRankZero(*address, 1, 4, "", 120);
  Expected<std::string> served = server.get();
  ASSERT_FALSE(bool(client));
  EXPECT_NE(toString(client.takeError()).find("published for 2 ranks"), std::string::npos);
  ASSERT_FALSE(bool(served));
  EXPECT_NE(toString(served.takeError()).find("connected as one of 4 ranks"), std::string::npos);
}

TEST(Rendezvous, TcpClientGivesUpWhenRankZeroNeverListens) {
  Expected<RendezvousAddress> address =
      parseRendezvous("tcp:127.0.0.1:" + std::to_string(freePort()));
  ASSERT_TRUE(bool(address));
  auto start = std::chrono::steady_clock::now();
  Expected<std::string> got = shareFromRankZero(*address, 1, 2, "", 0.5);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(bool(got));
  EXPECT_NE(toString(got.takeError()).find("could not get the id from rank 0"), std::string::npos);
  EXPECT_LT(seconds, 60);
}

TEST(Rendezvous, OneRankNeedsNobody) {
  Expected<RendezvousAddress> address = parseRendezvous("tcp:127.0.0.1:9");
  ASSERT_TRUE(bool(address));
  Expected<std::string> got = shareFromRankZero(*address, 0, 1, "solo", 1);
  ASSERT_TRUE(bool(got));
  EXPECT_EQ(*got, "solo");
}

} // namespace
} // namespace collc
