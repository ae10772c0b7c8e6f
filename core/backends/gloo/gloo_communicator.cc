#include "core/backends/gloo/gloo_communicator.h"

#include <map>

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "core/backends/gloo/gloo_collectives.h"
#include "core/backends/gloo/gloo_store.h"
#include "core/error.h"
#include "core/store/redis_values.h"
#include "core/signals.h"

namespace mw {
namespace {

// Names the transport context under a rendezvous context, which Gloo keeps
// protected: our buffers are TCP unbound buffers made on it directly.
class TcpContextOf : public gloo::rendezvous::Context {
 public:
  using gloo::rendezvous::Context::Context;
  std::shared_ptr<gloo::transport::tcp::Context> tcp() const {
    return std::dynamic_pointer_cast<gloo::transport::tcp::Context>(transportContext_);
  }
};

}  // namespace

std::shared_ptr<gloo::transport::Device> makeGlooDevice(const std::string& bind_address) {
  gloo::transport::tcp::attr attr;
  attr.hostname = bind_address;
  try {
    SigpipeBlockedForNewThreads no_sigpipe;  // for Gloo's event-loop thread
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error(Status::InvalidArgument,
                "cannot use bind_address '" + bind_address + "' for the Gloo transport: " + e.what());
  }
}

std::unique_ptr<GlooCommunicator> GlooCommunicator::connect(
    const std::shared_ptr<gloo::transport::Device>& device, RedisPool& pool,
    const Incarnation& inc, int rank, int size, Deadline deadline) {
  KvStore store(pool, inc, "g:", deadline);
  // Gloo reads each rank's address list under the rank's number; a list
  // that is not one is bad data in Redis, caught before Gloo parses it.
  const size_t address_bytes = gloo::transport::tcp::Address().bytes().size();
  store.checkValuesWith([size, address_bytes](const std::string& key, const std::vector<char>& value) {
    return parseRank(key, size) ? addressListProblem(value, size, address_bytes) : std::string();
  });
  auto ctx = std::make_shared<TcpContextOf>(rank, size);
  // Bounds the pair connections; every later wait passes its own timeout.
  ctx->setTimeout(std::max(remaining(deadline), std::chrono::milliseconds(1)));
  try {
    auto dev = device;
    GlooStore gloo_store(store);
    ctx->connectFullMesh(gloo_store, dev);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    if (remaining(deadline).count() == 0) {
      throw Error(Status::Timeout, std::string("connecting the Gloo mesh timed out: ") + e.what());
    }
    throw Error(Status::Backend, std::string("connecting the Gloo mesh failed: ") + e.what());
  }
  std::map<std::string, int> peer_by_address;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    // Gloo's list for rank `peer` (checked above) has one address per
    // other rank; ours is where connectFullMesh read it from.
    auto entry = addressEntry(store.get(std::to_string(peer)), peer, rank, size);
    if (!entry) throw Error(Status::Internal, "no address for rank " + std::to_string(rank) + " in rank " +
                                                  std::to_string(peer) + "'s checked address list");
    peer_by_address[gloo::transport::tcp::Address(*entry).str()] = peer;
  }
  auto tcp = ctx->tcp();
  if (!tcp) throw Error(Status::Backend, "the Gloo context has no TCP transport");
  return std::unique_ptr<GlooCommunicator>(new GlooCommunicator(
      std::make_unique<GlooLink>(std::move(ctx), std::move(tcp), std::move(peer_by_address))));
}

GlooCommunicator::GlooCommunicator(std::unique_ptr<GlooLink> link) : link_(std::move(link)) {
  const int size = link_->size();
  p2p_ = std::make_unique<GlooP2p>(*link_);
  sentinel_bytes_.assign(static_cast<size_t>(size), 0);
  sentinel_ = link_->context().createUnboundBuffer(sentinel_bytes_.data(), sentinel_bytes_.size());
  for (int peer = 0; peer < size; ++peer) {
    if (peer == link_->rank()) continue;
    sentinel_->recv(peer, gloo::Slot::build(kSentinelSlot, 0), static_cast<size_t>(peer), 1);
  }
}

GlooCommunicator::~GlooCommunicator() { close(); }

std::unique_ptr<PendingOp> GlooCommunicator::post(const OpDesc& op) {
  const size_t bytes = op.count * dtypeSize(op.dtype);
  const bool p2p = op.kind == OpKind::Send || op.kind == OpKind::Recv;
  if (p2p && bytes > kMaxP2pBytes) {
    throw Error(Status::InvalidArgument, std::string(opName(op.kind)) + " of " + std::to_string(bytes) +
                                             " bytes exceeds the Gloo limit of " + std::to_string(kMaxP2pBytes) +
                                             " bytes per message");
  }
  switch (op.kind) {
    case OpKind::Send:
      if (op.peer == link_->rank()) return self_.postSend(op.sendbuf, bytes);
      return p2p_->postSend(op.sendbuf, bytes, op.peer);
    case OpKind::Recv:
      if (op.peer == link_->rank()) return self_.postRecv(op.recvbuf, bytes);
      return p2p_->postRecv(op.recvbuf, bytes, op.peer);
    default:
      return makeGlooCollective(*link_, op);
  }
}

void GlooCommunicator::idleWait() {
  try {
    sentinel_->waitRecv(nullptr, kForever);
  } catch (const std::exception& e) {
    link_->rethrow(e, -1);
  }
}

void GlooCommunicator::wake() noexcept { sentinel_->abortWaitRecv(); }

void GlooCommunicator::abort() noexcept {
  std::lock_guard<std::mutex> lock(m_);
  if (aborted_ || closed_) return;
  aborted_ = true;
  self_.abort();
  link_->abortWaits();
  // Gloo has no abort call, but a receive that times out signals an error
  // on every pair of its context, which fails every pending and future
  // operation of this world and closes its sockets. That is exactly an abort.
  char byte = 0;
  try {
    auto probe = link_->context().createUnboundBuffer(&byte, 1);
    probe->waitRecv(nullptr, std::chrono::milliseconds(1));
  } catch (...) {
  }
}

void GlooCommunicator::close() noexcept {
  std::lock_guard<std::mutex> lock(m_);
  if (closed_) return;
  closed_ = true;
  p2p_.reset();
  sentinel_.reset();
  link_.reset();
}

}  // namespace mw
