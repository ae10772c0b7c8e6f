#include "core/backends/ucx/ucx_devices.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <set>

#include "core/error.h"

namespace mw {
namespace {

bool sameAddress(const sockaddr* a, const sockaddr* b) {
  if (!a || !b || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

std::string interfaceOf(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &resolved) != 0 || !resolved) {
    throw Error(Status::InvalidArgument, "bind_address '" + address + "' does not resolve");
  }
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    freeaddrinfo(resolved);
    throw Error(Status::Internal, "getifaddrs failed");
  }
  std::string name;
  for (addrinfo* a = resolved; a && name.empty(); a = a->ai_next) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next) {
      if (sameAddress(a->ai_addr, i->ifa_addr)) {
        name = i->ifa_name;
        break;
      }
    }
  }
  freeifaddrs(ifs);
  freeaddrinfo(resolved);
  if (name.empty()) {
    throw Error(Status::InvalidArgument, "bind_address '" + address + "' is on no interface of this host");
  }
  return name;
}

std::string netDevicesFor(const std::vector<std::string>& addresses) {
  std::set<std::string> seen;
  std::string list;
  for (const auto& a : addresses) {
    std::string dev = interfaceOf(a);
    if (!seen.insert(dev).second) continue;
    list += (list.empty() ? "" : ",") + dev;
  }
  return list;
}

}  // namespace mw
