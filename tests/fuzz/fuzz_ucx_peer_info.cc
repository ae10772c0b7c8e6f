// The record a UCX world's member publishes at rendezvous (worker address,
// world id, host, pid, data paths): what decodes is exactly what encodes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/backends/ucx/ucx_peer_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  mw::UcxPeerInfo info;
  if (!mw::decodePeerInfo(bytes, info)) return 0;
  if (info.listen_ip.empty() || info.listen_port == 0 || info.world_id == 0 || info.pid <= 0) std::abort();
  if (mw::encodePeerInfo(info) != bytes) std::abort();
  return 0;
}
