// The address an HTTP endpoint listens on: "host:port", or "[v6]:port".
#pragma once

#include <string>
#include <utility>

namespace mw::metrics {

// The host (without brackets) and the port; Error(InvalidArgument) naming
// `what` and the text when it is neither form, or the port is not in
// [0, 65535].
std::pair<std::string, int> splitHostPort(const std::string& what, const std::string& address);

}  // namespace mw::metrics
