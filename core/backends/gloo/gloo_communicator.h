// One world on Gloo: a full mesh of TCP pairs owned by one Gloo context.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/transport/context.h>
#include <gloo/transport/device.h>

#include "core/backends/gloo/gloo_link.h"
#include "core/backends/gloo/gloo_p2p.h"
#include "core/communicator.h"
#include "core/store/incarnation.h"
#include "core/store/kv_store.h"
#include "core/store/redis_pool.h"

namespace mw {

class GlooCommunicator : public Communicator {
 public:
  // Connects this rank to every other rank of the world, exchanging
  // addresses under the incarnation's "g:" keys. Throws Error (Timeout,
  // Store, Backend, WorldBroken), or MovedOn when the incarnation ends
  // while it waits (core/store/kv_store.h).
  static std::unique_ptr<GlooCommunicator> connect(const std::shared_ptr<gloo::transport::Device>& device,
                                                   RedisPool& pool, const Incarnation& inc, int rank, int size,
                                                   Deadline deadline);
  ~GlooCommunicator() override;

  std::unique_ptr<PendingOp> post(const OpDesc& op) override;
  void idleWait() override;
  void wake() noexcept override;
  void abort(int blamed) noexcept override;
  void close() noexcept override;

 private:
  explicit GlooCommunicator(std::unique_ptr<GlooLink> link);
  // The rank behind each address a pair's error can name.
  static std::map<std::string, int> mapPeerEnds(KvStore& store, gloo::transport::Context& tcp, int rank, int size);

  std::unique_ptr<GlooLink> link_;
  SelfChannel self_;
  std::unique_ptr<GlooP2p> p2p_;  // post() runs under the world's issue lock
  // One byte per peer, each with a recv posted that no peer ever sends to:
  // the worker idles in waitRecv on it, so a failing pair wakes it at once.
  std::vector<char> sentinel_bytes_;
  std::unique_ptr<gloo::transport::UnboundBuffer> sentinel_;

  std::mutex m_;  // orders abort() against close()
  bool aborted_ = false;
  bool closed_ = false;
};

// The transport device shared by every Gloo world of a context.
std::shared_ptr<gloo::transport::Device> makeGlooDevice(const std::string& bind_address);

}  // namespace mw
