// Endpoints from this context's worker to the workers of its peers.
//
// Every endpoint uses peer error mode: UCX reports a peer's failure through
// it, and a force-close completes everything pending on it at once, so a
// world can always hand its buffers back. Each world has its own, so one
// world's break never touches another's traffic.
//
// That rules out shared memory on UCX 1.13, which selects no shared-memory
// transport for endpoints in peer mode. Mode NONE would get it, but a
// process killed while it writes into a peer's shared-memory queue leaves
// that queue blocked for every other sender (bench/shm_kill_probe shows
// it), which is the isolation this library exists for. Processes of one
// host talk over TCP on loopback; cross-memory attach is not used either,
// as UCX requires memory invalidation for zero copy in peer mode.
//
// A process of this host is also watched through its pidfd, which names
// its death the moment it happens.
//
// All of it under the engine's lock.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_peer_info.h"

namespace mw {

class UcxLinks;

class UcxLink : public std::enable_shared_from_this<UcxLink> {
 public:
  ucp_ep_h ep() const { return ep_; }
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  int pid() const { return pid_; }
  bool watched() const { return watched_; }

  // `on_failure` runs (deferred, under the engine lock) when the link fails.
  uint64_t listen(std::function<void(const std::string& why)> on_failure);
  void unlisten(uint64_t id);

 private:
  friend class UcxLinks;
  UcxLinks* table_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  bool failed_ = false;
  std::string failure_;
  int pid_ = 0;
  UcxEngine::WatchId watch_ = 0;
  bool watched_ = false;
  uint64_t next_listener_ = 1;
  std::map<uint64_t, std::function<void(const std::string&)>> listeners_;
};

class UcxLinks {
 public:
  explicit UcxLinks(UcxEngine& engine) : engine_(engine) {}

  // A new link to `peer`'s worker. Throws Error(Backend) when UCX cannot
  // make the endpoint or the peer process is gone. Without `endpoint` the
  // link only watches the process (a world whose data goes over its paths,
  // ucx_failover.h).
  std::shared_ptr<UcxLink> connect(const UcxPeerInfo& peer, bool endpoint = true);
  // A world is done with `link`: its endpoint is force-closed, completing
  // whatever is still pending on it (Cancelled).
  void release(const std::shared_ptr<UcxLink>& link);

 private:
  friend class UcxLink;
  void openEndpoint(UcxLink& link, const UcxPeerInfo& peer);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void fail(UcxLink& link, const std::string& why);
  void close(UcxLink& link);

  UcxEngine& engine_;
};

}  // namespace mw
