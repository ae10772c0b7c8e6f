// The raw UCX baseline: a plain ucp tag-matching loop with nothing of
// multiworld in it. One ucp_context and one ucp_worker per object, created
// with the features multiworld's UCX backend asks for (TAG and WAKEUP, so
// that UCX selects the same transports), driven by polling
// (ucp_worker_progress) on the calling thread: no progress thread, no
// lock, no sleeping. Endpoints use the error-handling mode multiworld would
// pick for a peer on this host: NONE when UCX_TLS leaves shared memory in
// (UCX 1.13 never uses shared memory on PEER endpoints), PEER otherwise.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mwbench {

class RawUcx;

class RawUcxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One send or receive. Owned by the caller; must stay put until done.
struct RawUcxOp {
  uint64_t id = 0;              // the caller's, untouched
  bool done = true;
  ucs_status_t status = UCS_OK;
  std::size_t length = 0;       // bytes received
  bool queue = false;           // on completion, also append to the completed list (poll)
  RawUcx* owner = nullptr;     // set by send/recv
};

class RawUcx {
 public:
  RawUcx();  // throws RawUcxError
  ~RawUcx();
  RawUcx(const RawUcx&) = delete;
  RawUcx& operator=(const RawUcx&) = delete;

  // This worker's address, for the peers' connect().
  const std::string& address() const { return address_; }
  // An endpoint to a peer's worker address; returns its index.
  int connect(const std::string& peer_address);

  void send(int ep, const void* buf, std::size_t n, uint64_t tag, RawUcxOp& op);
  // Matches `tag` exactly.
  void recv(void* buf, std::size_t n, uint64_t tag, RawUcxOp& op);

  // Progresses until `op` is done (or `timeout_s` passed: throws).
  void wait(RawUcxOp& op, double timeout_s);
  // The same, the way a UCX program shares a CPU: polls for `spin_s`, then
  // sleeps on the worker's event fd (ucp_worker_arm) for 20 us, doubling
  // up to 1 ms (shared memory does not wake a sender when the peer makes
  // room or answers a rendezvous), as multiworld's engine does.
  void waitSleeping(RawUcxOp& op, double spin_s, double timeout_s);
  // Progresses until at least one op with `queue` set completed, then moves
  // every such completed op into `out` (cleared first).
  void poll(std::vector<RawUcxOp*>& out, double timeout_s);

  // Closes every endpoint (flushing; both sides must still be up), waiting
  // up to `timeout_s`.
  void closeAll(double timeout_s);

  // The error-handling mode connect() uses, and a name for it.
  static ucp_err_handling_mode_t errorMode();
  static const char* errorModeName();
  // Whether UCX_TLS lets processes on one host share memory (mm transports).
  static bool sharedMemoryAllowed();

 private:
  static void onSend(void* request, ucs_status_t status, void* arg);
  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void complete(RawUcxOp& op, ucs_status_t status, std::size_t length);
  void progressUntil(const bool& flag, double timeout_s, const char* what);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;  // the worker's event fd
  std::string address_;
  std::vector<ucp_ep_h> eps_;
  std::vector<RawUcxOp*> completed_;
  bool any_completed_ = false;
  ucs_status_t ep_error_ = UCS_OK;
};

}  // namespace mwbench
