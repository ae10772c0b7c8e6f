// Which network devices UCX may use: the interfaces that carry the
// addresses the program configured (bind_address), so that traffic leaves
// through them and UCX never pairs an interface with a peer it cannot
// route to.
#pragma once

#include <string>
#include <vector>

namespace mw {

// The local interface holding `address` (an IP literal or a host name that
// resolves to one of this host's addresses). Throws Error(InvalidArgument)
// naming the address when no local interface has it.
std::string interfaceOf(const std::string& address);

// "eth1,lo" for UCX_NET_DEVICES; empty: no restriction.
std::string netDevicesFor(const std::vector<std::string>& addresses);

}  // namespace mw
