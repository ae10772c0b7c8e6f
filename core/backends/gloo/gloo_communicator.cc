#include "core/backends/gloo/gloo_communicator.h"

#include <map>
#include <string_view>

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "core/backends/gloo/gloo_abortable.h"
#include "core/backends/gloo/gloo_collectives.h"
#include "core/backends/gloo/gloo_store.h"
#include "core/error.h"
#include "core/store/redis_values.h"
#include "core/signals.h"

namespace mw {
namespace {

// Where each rank publishes the near ends of its connected pairs.
constexpr std::string_view kEndsKey = "ends_";

// Names the transport context under a rendezvous context, which Gloo keeps
// protected: our buffers are TCP unbound buffers made on it directly.
class TcpContextOf : public gloo::rendezvous::Context {
 public:
  using gloo::rendezvous::Context::Context;
  // Before makeAbortable(), which puts a wrapper in its place.
  std::shared_ptr<gloo::transport::tcp::Context> tcp() const {
    return std::dynamic_pointer_cast<gloo::transport::tcp::Context>(transportContext_);
  }
  // Once connected: Gloo's algorithms make their buffers through
  // `buffers` from now on (gloo_abortable.h).
  void makeAbortable(const std::shared_ptr<AbortableBuffers>& buffers) {
    transportContext_ = std::make_shared<AbortableTransport>(transportContext_, buffers);
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
  // Gloo reads each rank's address list under the rank's number, and we
  // read each rank's connected ends under "ends_" and its number; a list
  // that is not one is bad data in Redis, caught before anyone parses it.
  const size_t address_bytes = gloo::transport::tcp::Address().bytes().size();
  store.checkValuesWith([size, address_bytes](const std::string& key, const std::vector<char>& value) {
    const std::string_view k(key);
    const bool list = parseRank(k, size) || (k.rfind(kEndsKey, 0) == 0 && parseRank(k.substr(kEndsKey.size()), size));
    return list ? addressListProblem(value, size, address_bytes) : std::string();
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
  auto tcp = ctx->tcp();
  if (!tcp) throw Error(Status::Backend, "the Gloo context has no TCP transport");
  auto collectives = std::make_shared<AbortableBuffers>();
  ctx->makeAbortable(collectives);
  auto peer_by_address = mapPeerEnds(store, *tcp, rank, size);
  // Posting the standing receives fails when a pair failed meanwhile.
  try {
    return std::unique_ptr<GlooCommunicator>(new GlooCommunicator(
        std::make_unique<GlooLink>(std::move(ctx), std::move(tcp), std::move(peer_by_address), std::move(collectives))));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(Status::Backend, std::string("a Gloo connection failed as the world formed: ") + e.what());
  }
}

// A pair's error names its peer_ address: the peer's listening address
// (what this rank read from the store to connect, and where a connecting
// side's socket leads), or, where this rank accepted the connection before
// Gloo's connect() call set it, the far end of the accepted socket (Gloo's
// getpeername): the peer's ephemeral port. So each rank publishes the near
// end of every pair (Gloo's pair address(), its getsockname once
// connected), and maps both what it read to connect and what each peer
// published for it.
std::map<std::string, int> GlooCommunicator::mapPeerEnds(KvStore& store, gloo::transport::Context& tcp, int rank,
                                                         int size) {
  using gloo::transport::tcp::Address;
  std::vector<char> mine;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    auto bytes = tcp.getPair(peer)->address().bytes();
    mine.insert(mine.end(), bytes.begin(), bytes.end());
  }
  store.set(std::string(kEndsKey) + std::to_string(rank), mine);
  std::map<std::string, int> peer_by_address;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    // Both lists (checked on reading) have one address per other rank.
    for (const std::string& key : {std::to_string(peer), std::string(kEndsKey) + std::to_string(peer)}) {
      auto entry = addressEntry(store.get(key), peer, rank, size);
      if (!entry) throw Error(Status::Internal, "no address for rank " + std::to_string(rank) + " in rank " +
                                                    std::to_string(peer) + "'s checked address list " + key);
      peer_by_address[Address(*entry).str()] = peer;
    }
  }
  return peer_by_address;
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

void GlooCommunicator::abort(int blamed) noexcept {
  std::lock_guard<std::mutex> lock(m_);
  if (aborted_ || closed_) return;
  aborted_ = true;
  self_.abort();
  link_->abortWaits();
  link_->tellPeers(blamed);
  // Gloo has no abort call, but a receive that times out signals an error
  // on every pair of its context, which fails every pending and future
  // operation of this world and closes its sockets. That is exactly an abort.
  // The probe is made on the TCP context itself: one of Gloo's algorithms'
  // buffers would refuse to wait once they are aborted, below.
  char byte = 0;
  try {
    auto probe = link_->buffer(&byte, 1);
    probe->waitRecv(nullptr, std::chrono::milliseconds(1));
  } catch (...) {
  }
  // What Gloo's algorithms wait on that the failed pairs do not wake.
  link_->abortCollectives();
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
