// Which network devices UCX may use: the interfaces that carry the
// addresses the program configured (data_addresses, or bind_address), so
// that traffic leaves through them and UCX never pairs an interface with a
// peer it cannot route to; and the addresses a context publishes as its
// paths when none are configured.
#pragma once

#include <string>
#include <vector>

namespace mw {

// The local interface holding `address` (an IP literal or a host name that
// resolves to one of this host's addresses). Throws Error(InvalidArgument)
// naming the address and the config `key` it came from when no local
// interface has it.
std::string interfaceOf(const std::string& address, const std::string& key);

// "eth1,lo" for UCX_NET_DEVICES; empty: no restriction.
std::string netDevicesFor(const std::vector<std::string>& addresses, const std::string& key);

// The first address of every non-loopback interface that is up, in the
// kernel's interface order; empty when there is none.
std::vector<std::string> upInterfaceAddresses();

}  // namespace mw
