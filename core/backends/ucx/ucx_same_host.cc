// The same-host path of UCX worlds (ucx_same_host.h): the world's part
// (who reads whom, the control words) and the operations' (lending a send,
// reading a loan).
#include "core/backends/ucx/ucx_same_host.h"

#include <cstring>

#include "core/backends/ucx/ucx_context.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_peer_info.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/log.h"
#include "core/same_host/probe.h"
#include "core/world.h"

namespace mw {

// ------------------------------------------------------------ the world

void UcxWorld::probeSameHost(int peer, const UcxPeerInfo& self, const UcxPeerInfo& info, bool on_paths) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (peer == rank_ || on_paths || info.host != self.host) return;
  if (info.net_namespace.empty() || info.net_namespace != self.net_namespace) return;  // another host, as the network sees it
  if (self.paths.size() >= 2 || info.paths.size() >= 2) return;  // rails: a cut link must show
  p.same_host_hello = true;  // the peer decides alike from the same records
  if (!same_host_) return;
  if (!p.link->watched()) {
    p.same_host_refusal = "its process is not watched through a pidfd";
    return;
  }
  p.same_host_refusal = samehost::probeReadable(info.pid, info.probe_address, info.probe_value);
  if (p.same_host_refusal.empty()) p.same_host_refusal = samehost::probeTakesFds(info.pid, peerPidfd(peer));
  p.reads = p.same_host_refusal.empty();
}

void UcxWorld::reportSameHost() {
  for (int r = 0; r < size(); ++r) {
    const Peer& p = peers_[static_cast<size_t>(r)];
    if (p.reads) {
      ucx_->noteSameHost(world_->name(), r, true, "");
    } else if (!p.same_host_refusal.empty()) {
      MW_LOG(LogLevel::Warn, "world '%s': rank %d of this host stays on TCP to rank %d: %s", world_->name().c_str(),
             rank_, r, p.same_host_refusal.c_str());
      ucx_->noteSameHost(world_->name(), r, false, p.same_host_refusal);
    }
  }
}

bool UcxWorld::lendsTo(int peer, size_t bytes) const {
  return bytes >= same_host_min_bytes_ && peers_[static_cast<size_t>(peer)].lends;
}

uint64_t UcxWorld::lend(UcxTransfer& t) {
  const uint64_t id = next_loan_++ & ~ucxcontrol::kKindMask;
  loans_[id] = &t;
  return id;
}

void UcxWorld::unlend(uint64_t id) { loans_.erase(id); }

void UcxWorld::returnLoan(int peer, uint64_t id) { sendControlWord(peer, ucxcontrol::kReturned | id); }

void UcxWorld::onLoanReturned(int peer, uint64_t id) {
  auto it = loans_.find(id);
  if (it == loans_.end()) return;  // given up meanwhile
  UcxTransfer& t = *it->second;
  if (t.peer != peer) {
    transportFailed(peer, "rank " + std::to_string(peer) + " returned loan " + std::to_string(id) +
                              ", which was lent to rank " + std::to_string(t.peer));
    return;
  }
  loans_.erase(it);
  UcxOp::Entry entry(*t.op);
  t.op->loanReturned(t);
}

int UcxWorld::peerPid(int peer) const { return peers_[static_cast<size_t>(peer)].link->pid(); }

int UcxWorld::peerPidfd(int peer) const { return ucx_->engine()->pidfdOf(peerPid(peer)); }

void UcxWorld::sendControlWord(int peer, uint64_t word) {
  if (samehost::RingPair* ring = this->ring(peer, false)) return ring->sendWord(word);
  const UcxLink& link = *peers_[static_cast<size_t>(peer)].link;
  if (link.failed() || !link.ep()) return;
  // UCX may keep the word until the send leaves.
  auto* held = new uint64_t(word);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    delete static_cast<uint64_t*>(arg);
  };
  param.user_data = held;
  void* r = ucp_tag_send_nbx(link.ep(), held, sizeof *held, sendTag(peer, ucxtag::kControl), &param);
  if (!UCS_PTR_IS_PTR(r)) delete held;  // done or failed at once; a failure breaks the link
}

// ------------------------------------------------------- the operations

void UcxOp::postLoan(UcxTransfer& t, uint64_t channel, samehost::RingPair& ring) {
  auto loan = std::make_shared<UcxLoan>();
  t.loan = loan;
  t.path = metrics::DataPath::Cma;
  samehost::CmaDescriptor& d = loan->descriptor;
  d.magic = samehost::kCmaMagic;
  d.address = reinterpret_cast<uint64_t>(t.buffer);
  d.bytes = t.bytes;
  d.ticket_address = loan->ticket.address();
  d.ticket = loan->ticket.issue();
  d.id = world_->lend(t);
  loan->in_ring = true;
  UcxTransfer* tp = &t;
  ring.send(channel, &d, sizeof d, true, [this, tp](DeliveryOutcome o) {
    Entry entry(*this);
    tp->loan->in_ring = false;
    if (o == DeliveryOutcome::Delivered) return settleLoan(*tp);
    tp->loan->status = UCS_ERR_CANCELED;
    giveUpLoan(*tp);
  });
}

void UcxOp::loanReturned(UcxTransfer& t) {
  t.loan->returned = true;
  settleLoan(t);
}

void UcxOp::giveUpLoans(int peer) {
  std::vector<UcxTransfer*> loans;
  for (UcxTransfer* t : posted_) {
    if (t->loan && (peer < 0 || t->peer == peer)) loans.push_back(t);
  }
  for (UcxTransfer* t : loans) giveUpLoan(*t);
}

void UcxOp::giveUpLoan(UcxTransfer& t) {
  UcxLoan& loan = *t.loan;
  if (!loan.returned && !loan.given_up) {
    loan.given_up = true;
    loan.ticket.withdraw();
    if (loan.status == UCS_OK) loan.status = UCS_ERR_CANCELED;
  }
  settleLoan(t);
}

void UcxOp::settleLoan(UcxTransfer& t) {
  UcxLoan& loan = *t.loan;
  if (loan.ended || loan.in_ring || !(loan.returned || loan.given_up)) return;
  loan.ended = true;
  loan.ticket.withdraw();
  if (world_) world_->unlend(loan.descriptor.id);
  ended(t, loan.returned ? UCS_OK : loan.status, t.bytes);
}

void UcxOp::readLoan(UcxTransfer& t, size_t length) {
  t.path = metrics::DataPath::Cma;
  if (!world_) return ended(t, UCS_ERR_CANCELED, 0);
  samehost::CmaDescriptor d;
  if (length == sizeof d) std::memcpy(&d, t.room ? &t.room->descriptor : t.buffer, sizeof d);
  if (!world_->readsFrom(t.peer) || length != sizeof d || d.magic != samehost::kCmaMagic ||
      (d.id & ucxcontrol::kKindMask) != 0) {
    world_->transportFailed(t.peer, "rank " + std::to_string(t.peer) +
                                        " sent a same-host descriptor this member cannot take (" +
                                        std::to_string(length) + " bytes)");
    return ended(t, UCS_ERR_CANCELED, 0);
  }
  if (d.bytes != t.bytes) {
    // As a message that does not fit: the receive fails, the send is done.
    world_->returnLoan(t.peer, d.id);
    return ended(t, UCS_OK, d.bytes);
  }
  const int pid = world_->peerPid(t.peer);
  const int pidfd = world_->peerPidfd(t.peer);
  // Without its pidfd the pid may name another process by now.
  const samehost::CmaResult r =
      pidfd < 0 ? samehost::CmaResult{samehost::CmaOutcome::Gone, 0} : samehost::cmaRead(pid, pidfd, d, t.buffer);
  if (r.outcome == samehost::CmaOutcome::Read) {
    world_->returnLoan(t.peer, d.id);
    return ended(t, UCS_OK, t.bytes);
  }
  std::string why = samehost::describe(r.outcome);
  if (r.error) why += std::string(" (") + strerror(r.error) + ")";
  world_->transportFailed(t.peer, "a message of " + std::to_string(d.bytes) + " bytes from rank " +
                                      std::to_string(t.peer) + " (pid " + std::to_string(pid) +
                                      ") could not be read: " + why);
  ended(t, UCS_ERR_CANCELED, 0);
}

}  // namespace mw
