// Ports for servers a lab starts itself.
#pragma once

namespace mwlab {

// A loopback TCP port nothing listens on right now (the kernel's pick of
// an ephemeral port). Throws std::runtime_error when none can be had.
int freeLoopbackPort();

}  // namespace mwlab
