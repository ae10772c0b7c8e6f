// The raw UCX baseline: a plain ucp tag-matching loop with nothing of
// multiworld in it. One ucp_context and one ucp_worker per object, created
// with the features multiworld's UCX backend asks for (TAG and WAKEUP, so
// that UCX selects the same transports), driven by polling
// (ucp_worker_progress) on the calling thread: no progress thread, no
// lock, no sleeping. Its endpoints use UCP_ERR_HANDLING_MODE_PEER, as every
// endpoint of multiworld's UCX backend does, so the baseline runs over the
// transports ours runs over (on one host: tcp on loopback, since UCX 1.13
// selects no shared memory for PEER endpoints). Mode NONE is there only
// for the reference of what that costs (p2p's shm_* columns).
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
  // `net_devices` as UCX_NET_DEVICES (unless that is set): the bench runs
  // ours with bind_address 127.0.0.1, which restricts it to "lo".
  explicit RawUcx(ucp_err_handling_mode_t mode = UCP_ERR_HANDLING_MODE_PEER,
                  const char* net_devices = "lo");  // throws RawUcxError
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
  // poll(), waiting as waitSleeping() does.
  void pollSleeping(std::vector<RawUcxOp*>& out, double spin_s, double timeout_s);
  // Progresses until at least one op with `queue` set completed, then moves
  // every such completed op into `out` (cleared first).
  void poll(std::vector<RawUcxOp*>& out, double timeout_s);

  // Closes every endpoint (flushing; both sides must still be up), waiting
  // up to `timeout_s`.
  void closeAll(double timeout_s);

  // The transports UCX chose for endpoint `ep`, one "tl/device" per lane
  // (ucp_ep_print_info), e.g. "tcp/lo" or "sysv/memory cma/memory".
  std::string lanes(int ep) const;
  // Whether UCX_TLS lets processes on one host share memory (mm transports).
  static bool sharedMemoryAllowed();

 private:
  void progressSleeping(const bool& flag, double spin_s, double timeout_s, const char* what);
  static void onSend(void* request, ucs_status_t status, void* arg);
  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void complete(RawUcxOp& op, ucs_status_t status, std::size_t length);
  void progressUntil(const bool& flag, double timeout_s, const char* what);

  const ucp_err_handling_mode_t mode_;
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
