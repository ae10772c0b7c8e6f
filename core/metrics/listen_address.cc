#include "core/metrics/listen_address.h"

#include "core/capped_text.h"
#include "core/error.h"

namespace mw::metrics {

std::pair<std::string, int> splitHostPort(const std::string& what, const std::string& address) {
  auto bad = [&] {
    return Error(Status::InvalidArgument, what + ": '" + cappedText(address) +
                                              "' is not host:port (or [v6 address]:port) with a port in [0, 65535]");
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) throw bad();
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    throw bad();  // an IPv6 address needs its brackets
  }
  if (port_text.size() > 5) throw bad();
  int port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') throw bad();
    port = port * 10 + (c - '0');
  }
  if (port > 65535) throw bad();
  return {host, port};
}

}  // namespace mw::metrics
