#include "core/backends/ucx/rails/ucx_path_sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace mw {
namespace {

// An IPv4 or IPv6 address as text, for comparison with a socket's.
struct Address {
  int family = AF_UNSPEC;
  unsigned char bytes[16] = {};
};

Address parse(const std::string& text) {
  Address a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET;
  } else if (inet_pton(AF_INET6, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET6;
  }
  return a;
}

bool matches(const sockaddr_storage& s, const Address& a, uint16_t* port) {
  if (s.ss_family != a.family) return false;
  if (a.family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(s);
    if (port) *port = ntohs(in.sin_port);
    return std::memcmp(&in.sin_addr, a.bytes, 4) == 0;
  }
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(s);
  if (port) *port = ntohs(in6.sin6_port);
  return std::memcmp(&in6.sin6_addr, a.bytes, 16) == 0;
}

}  // namespace

size_t shutDownConnections(const std::string& local_ip, const std::string& peer_ip,
                           uint16_t spare_peer_port) noexcept {
  const Address local = parse(local_ip);
  const Address peer = parse(peer_ip);
  if (local.family == AF_UNSPEC || peer.family == AF_UNSPEC) return 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return 0;
  size_t count = 0;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    const int s = static_cast<int>(fd);
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage mine{}, theirs{};
    socklen_t mine_len = sizeof mine, theirs_len = sizeof theirs;
    if (getsockname(s, reinterpret_cast<sockaddr*>(&mine), &mine_len) != 0) continue;
    if (getpeername(s, reinterpret_cast<sockaddr*>(&theirs), &theirs_len) != 0) continue;  // a listener
    uint16_t their_port = 0;
    if (!matches(mine, local, nullptr) || !matches(theirs, peer, &their_port) || their_port == spare_peer_port) {
      continue;
    }
    if (shutdown(s, SHUT_RDWR) == 0) ++count;
  }
  closedir(dir);
  return count;
}

}  // namespace mw
