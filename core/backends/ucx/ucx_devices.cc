#include "core/backends/ucx/ucx_devices.h"

#include <arpa/inet.h>
#include <net/if.h>
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

std::string interfaceOf(const std::string& address, const std::string& key) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &resolved) != 0 || !resolved) {
    throw Error(Status::InvalidArgument, key + " '" + address + "' does not resolve");
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
    throw Error(Status::InvalidArgument, key + " '" + address + "' is on no interface of this host");
  }
  return name;
}

std::string netDevicesFor(const std::vector<std::string>& addresses, const std::string& key) {
  std::set<std::string> seen;
  std::string list;
  for (const auto& a : addresses) {
    std::string dev = interfaceOf(a, key);
    if (!seen.insert(dev).second) continue;
    list += (list.empty() ? "" : ",") + dev;
  }
  return list;
}

std::vector<std::string> upInterfaceAddresses() {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return {};
  std::vector<std::string> out;
  std::set<std::string> named;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char text[INET6_ADDRSTRLEN] = {0};
    if (i->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr;
      if (IN6_IS_ADDR_LINKLOCAL(&a6)) continue;  // needs a zone: not an address a peer can use as is
      inet_ntop(AF_INET6, &a6, text, sizeof text);
    } else {
      continue;
    }
    if (named.insert(i->ifa_name).second) out.emplace_back(text);
  }
  freeifaddrs(ifs);
  return out;
}

}  // namespace mw
