// shutDownConnections: the TCP connections of a path that is down stop
// blocking a sender at once, and nothing else is touched.
#include "core/backends/ucx/rails/ucx_path_sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace {

sockaddr_in at(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

// Sockets closed when the test ends, whatever it asserted.
struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) ::close(fd);
  }
  int add(int fd) {
    fds.push_back(fd);
    return fd;
  }
};

uint16_t listenOn(Fds& fds, const char* ip) {
  const int fd = fds.add(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a = at(ip, 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << ip;
  EXPECT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// A connection from `from` to `to`:`port`, non-blocking on the client end.
int connectFrom(Fds& fds, const char* from, const char* to, uint16_t port) {
  const int fd = fds.add(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in local = at(from, 0), remote = at(to, port);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local), 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote), 0) << std::strerror(errno);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

ssize_t sendSome(int fd) {
  static char block[64 << 10];
  return send(fd, block, sizeof block, MSG_NOSIGNAL);
}

TEST(PathSockets, AFullConnectionFailsAtOnceInsteadOfWaiting) {
  Fds fds;
  const uint16_t port = listenOn(fds, "127.0.0.3");
  const int client = connectFrom(fds, "127.0.0.1", "127.0.0.3", port);
  // Nobody reads: the send buffer fills, as over a link that is down.
  while (sendSome(client) > 0) {
  }
  ASSERT_EQ(errno, EAGAIN);
  EXPECT_EQ(mw::shutDownConnections("127.0.0.1", "127.0.0.3", 0), 1u);
  EXPECT_EQ(sendSome(client), -1);
  EXPECT_EQ(errno, EPIPE);
}

TEST(PathSockets, LeavesTheProbePortAndOtherAddressesAlone) {
  Fds fds;
  const uint16_t data_port = listenOn(fds, "127.0.0.3");
  const uint16_t probe_port = listenOn(fds, "127.0.0.3");
  const uint16_t other_port = listenOn(fds, "127.0.0.4");
  const int data = connectFrom(fds, "127.0.0.1", "127.0.0.3", data_port);
  const int probe = connectFrom(fds, "127.0.0.1", "127.0.0.3", probe_port);
  const int other_peer = connectFrom(fds, "127.0.0.1", "127.0.0.4", other_port);
  const int other_local = connectFrom(fds, "127.0.0.2", "127.0.0.3", data_port);
  EXPECT_EQ(mw::shutDownConnections("127.0.0.1", "127.0.0.3", probe_port), 1u);
  EXPECT_EQ(sendSome(data), -1);
  EXPECT_GT(sendSome(probe), 0);
  EXPECT_GT(sendSome(other_peer), 0);
  EXPECT_GT(sendSome(other_local), 0);
}

TEST(PathSockets, AddressesThatAreNotIpShutNothing) {
  Fds fds;
  const uint16_t port = listenOn(fds, "127.0.0.3");
  const int client = connectFrom(fds, "127.0.0.1", "127.0.0.3", port);
  EXPECT_EQ(mw::shutDownConnections("", "127.0.0.3", 0), 0u);
  EXPECT_EQ(mw::shutDownConnections("127.0.0.1", "not-an-address", 0), 0u);
  EXPECT_EQ(mw::shutDownConnections("127.0.0.1", "::1", 0), 0u);
  EXPECT_GT(sendSome(client), 0);
}

}  // namespace
