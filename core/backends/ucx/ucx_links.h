// Endpoints from this context's worker to the workers of its peers.
//
// UCX 1.13 selects no shared memory for an endpoint in peer error mode, so
// an endpoint to a process of this host uses mode NONE, and the death of
// that process is noticed by watching it (pidfd). Such an endpoint cannot
// be force-closed, and a plain close keeps it until the worker goes while
// the peer still has one to us. So there is one per peer worker, shared by
// every world that includes it, kept until that process exits (or the
// context goes). Tag matching keeps the worlds' traffic apart.
//
// An endpoint to another host (or when shared memory is off) uses peer
// error mode: UCX reports the peer's failure through the endpoint, and a
// force-close completes everything pending on it. Each world gets its own,
// so one world's break never touches another's traffic.
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
  // Mode NONE, shared by the worlds of this context that include the peer.
  bool shared() const { return shared_; }
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  int pid() const { return pid_; }

  // `on_failure` runs (deferred, under the engine lock) when the link fails.
  uint64_t listen(std::function<void(const std::string& why)> on_failure);
  void unlisten(uint64_t id);

 private:
  friend class UcxLinks;
  UcxLinks* table_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  bool shared_ = false;
  bool failed_ = false;
  std::string failure_;
  std::string key_;  // the remote worker address, for shared links
  int pid_ = 0;
  UcxEngine::WatchId watch_ = 0;
  bool watched_ = false;
  uint64_t next_listener_ = 1;
  std::map<uint64_t, std::function<void(const std::string&)>> listeners_;
};

class UcxLinks {
 public:
  explicit UcxLinks(UcxEngine& engine);
  ~UcxLinks();

  // A link to `peer`'s worker. Throws Error(Backend) when UCX cannot make
  // the endpoint, Error(WorldBroken-free) never.
  std::shared_ptr<UcxLink> connect(const UcxPeerInfo& peer);
  // A world is done with `link`: its own endpoint is force-closed; a shared
  // one stays for the next world.
  void release(const std::shared_ptr<UcxLink>& link);

  // Whether same-host peers talk over shared memory at all (UCX_TLS may
  // leave it out; then every endpoint uses peer error mode).
  bool sharedMemory() const { return shared_memory_; }

 private:
  friend class UcxLink;
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void fail(UcxLink& link, const std::string& why);
  void close(UcxLink& link, bool force);

  UcxEngine& engine_;
  const bool shared_memory_;
  std::map<std::string, std::shared_ptr<UcxLink>> shared_;  // by worker address
};

}  // namespace mw
