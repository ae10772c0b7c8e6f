// The listeners of a context's path workers (ucx_failover.h): path worker
// i listens on path address i, and a peer's endpoint on that path is a
// client-server one made to it, like every endpoint here (ucx_links.h).
//
// Each member sends on the endpoint it made itself; what the peer answers
// (acknowledgements, probe answers) goes back on UCX's reply endpoint, which
// is the one accepted here. So an accepted endpoint needs no owner: it
// lives until UCX reports its peer's endpoint gone, or the context ends.
//
// On the engine's owner, like everything UCX here (ucx_engine.h).
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/ucx/ucx_engine.h"

namespace mw {

class UcxPathAcceptors {
 public:
  // One listener per path worker, on `addresses[i]`, made on the engine's
  // owner. Throws Error(Backend) naming the address UCX cannot listen on.
  UcxPathAcceptors(UcxEngine& engine, const std::vector<std::string>& addresses);
  ~UcxPathAcceptors();  // owner
  UcxPathAcceptors(const UcxPathAcceptors&) = delete;
  UcxPathAcceptors& operator=(const UcxPathAcceptors&) = delete;

  uint16_t port(size_t path) const { return paths_[path]->port; }

 private:
  void listen(const std::vector<std::string>& addresses);
  struct Path {
    UcxPathAcceptors* owner;
    size_t index;
    ucp_listener_h listener = nullptr;
    uint16_t port = 0;
  };
  struct Accepted {
    UcxPathAcceptors* owner;
    uint64_t id;
    ucp_ep_h ep = nullptr;
  };

  static void onConnectionRequest(ucp_conn_request_h request, void* arg);
  static void onError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void accept(size_t path, ucp_conn_request_h request);
  void close(uint64_t id);

  UcxEngine& engine_;
  std::vector<std::unique_ptr<Path>> paths_;
  std::map<uint64_t, std::unique_ptr<Accepted>> accepted_;
  uint64_t next_id_ = 1;
  // Deferred work holds it weakly: the acceptors may be gone when it runs.
  std::shared_ptr<UcxPathAcceptors*> alive_;
};

}  // namespace mw
