// The UCX state of one mw context: its progress engine, its links to peer
// workers, the ids its worlds carry in message tags, and the operations of
// destroyed worlds that UCX still holds.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <set>
#include <string>
#include <vector>

#include "core/backends/ucx/rails/ucx_path_accept.h"
#include "core/backends/ucx/rails/ucx_path_probe.h"
#include "core/backends/ucx/rails/ucx_path_wire.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/config.h"

namespace mw {

class UcxOp;

class UcxContext {
 public:
  // Throws Error(Backend) when UCX cannot start, Error(InvalidArgument)
  // when a configured address is on no interface of this host.
  explicit UcxContext(const Config& cfg);
  ~UcxContext();

  const std::shared_ptr<UcxEngine>& engine() const { return engine_; }

  // mw_context_free, once every world is destroyed: closes the endpoints
  // and stops the engine, even while requests still hold this object.
  void shutdown();

  // The local addresses this context publishes as its data paths, in
  // order of preference (data_addresses, bind_address, or every
  // non-loopback interface that is up).
  const std::vector<std::string>& paths() const { return paths_; }

  // For `multiworld status` (any thread): "10.0.1.1 10.0.2.1", then
  // "; down: 10.0.1.2 (world w rank 1), ..." for each path a world of this
  // context sees down; empty without path workers.
  std::string pathsReport() const;
  void notePath(const std::string& world, int peer, const std::string& peer_ip, bool up);
  void forgetPaths(const std::string& world);
  // The same-host path of a pair, for the same report (any thread):
  // "same-host: world w rank 1; tcp: world w rank 2 (why)".
  void noteSameHost(const std::string& world, int peer, bool lent, const std::string& why);
  void forgetSameHost(const std::string& world);

  // path_timeout_ms and heartbeat_timeout_ms (rails/ucx_failover.h).
  std::chrono::milliseconds pathTimeout() const { return path_timeout_; }
  std::chrono::milliseconds memberTimeout() const { return member_timeout_; }

  // On the engine's owner.
  UcxLinks& links() { return *links_; }
  // Null when this context runs no path workers (fewer than two paths, or
  // path_failover off).
  UcxPathRouter* router() { return router_.get(); }
  // The port of path `path`'s reachability listener (rails/ucx_path_probe.h).
  uint16_t probePort(size_t path) const { return listeners_ ? listeners_->port(path) : 0; }
  // The port where path `path`'s worker listens (rails/ucx_path_accept.h).
  uint16_t pathListenPort(size_t path) const { return acceptors_ ? acceptors_->port(path) : 0; }
  // A world id no live world of this context has (1 .. 2^24-1), chosen
  // round-robin so that an id comes back only after 2^24 - 1 others.
  // Throws Error(Unsupported) when every id is in use.
  uint32_t allocateWorldId();
  // The world and its endpoints are gone: nothing can arrive for it.
  void releaseWorldId(uint32_t id);
  // Keeps an operation of a destroyed world whose transfers UCX still
  // holds (to a process that is gone, or stopped past destroy's bound)
  // until the worker goes, so a late callback finds it.
  void adopt(std::unique_ptr<UcxOp> op);

 private:
  std::shared_ptr<UcxEngine> engine_;
  std::unique_ptr<UcxLinks> links_;
  std::unique_ptr<UcxPathRouter> router_;
  std::unique_ptr<UcxPathListeners> listeners_;
  std::unique_ptr<UcxPathAcceptors> acceptors_;
  std::vector<std::string> paths_;
  const std::chrono::milliseconds path_timeout_;
  const std::chrono::milliseconds member_timeout_;
  bool has_paths_ = false;  // set before any other thread sees this
  mutable std::mutex report_m_;
  std::set<std::string> down_;  // "<peer ip> (world <name> rank <r>)"
  std::map<std::pair<std::string, int>, std::string> same_host_;  // (world, peer) -> "" (lent) or why not
  std::set<uint32_t> in_use_;
  uint32_t next_id_ = 1;
  std::vector<std::unique_ptr<UcxOp>> orphans_;
};

}  // namespace mw
