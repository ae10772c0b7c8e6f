// Socket addresses for UCX's client-server endpoints and listeners.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace mw {

// `ip` (an IP literal) and `port` as a socket address; false when `ip` is
// no IP literal.
bool socketAddress(const std::string& ip, uint16_t port, sockaddr_storage& out, socklen_t& length);

// The port of an IPv4 or IPv6 address (0 for another family).
uint16_t portOf(const sockaddr_storage& address);

}  // namespace mw
