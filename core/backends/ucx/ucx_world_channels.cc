// How a UCX world picks each peer's channel (channels/ucx_channel.h) while
// it connects: RailChannel when every member published two or more paths;
// else, for a member of this host by the records, RingChannel when a ring
// goes either way (channels/ring_hello.h), and TagChannel otherwise.
//
// Who reads whom: before the world starts each member probes, for every
// peer of its host (ucx_peer_info.h: boot, pid and network namespace),
// whether the kernel lets it read the peer and take its descriptors, and
// says so in its same-host hello; a member takes the peer's ring only when
// it may, so a refusal in one direction keeps that direction on TCP.
// Worlds on two or more paths (rails) never take this path: a cut link
// must never be hidden. A resize's successor also says hello over every
// link it kept from the world it resized, wherever the peer runs: the
// hello is its fence (ucx_world.h).
//
// Everything here runs on the engine's owner.
#include <algorithm>

#include "core/backends/ucx/channels/rail_channel.h"
#include "core/backends/ucx/channels/ring_channel.h"
#include "core/backends/ucx/channels/tag_channel.h"
#include "core/backends/ucx/ucx_links.h"
#include "core/backends/ucx/ucx_peer_info.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/error.h"
#include "core/log.h"
#include "core/same_host/probe.h"
#include "core/world.h"

namespace mw {
namespace {

// The ring each member of a pair writes; a multiple of the page size.
constexpr uint64_t kRingBytes = 256 * 1024;

}  // namespace

void UcxWorld::probeSameHost(int peer, const UcxPeerInfo& self, const UcxPeerInfo& info, bool on_paths) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  if (peer == rank_ || on_paths || info.host != self.host) return;
  if (info.net_namespace.empty() || info.net_namespace != self.net_namespace) return;  // another host, as the network sees it
  if (self.paths.size() >= 2 || info.paths.size() >= 2) return;  // rails: a cut link must show
  p.on_host = true;
  p.same_host_hello = true;  // the peer decides alike from the same records
  if (!same_host_) return;
  if (!p.link->watched()) {
    p.same_host_refusal = "its process is not watched through a pidfd";
    return;
  }
  const int pidfd = engine().pidfdOf(info.pid);
  p.same_host_refusal = samehost::probeReadable(info.pid, info.probe_address, info.probe_value);
  if (p.same_host_refusal.empty()) p.same_host_refusal = samehost::probeTakesFds(info.pid, pidfd);
  p.reads = p.same_host_refusal.empty();
}

void UcxWorld::sendSameHostHellos() {
  hellos_ = std::make_unique<RingHellos>(engine());
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (!p.same_host_hello) continue;
    // The ring this member would write; what the peer answers decides.
    std::unique_ptr<samehost::RingPair> ring;
    if (same_host_ && p.on_host) ring = std::make_unique<samehost::RingPair>(kRingBytes);  // throws, naming the call
    hellos_->send(r, p.link->ep(), ucxtag::make(p.world_id, rank_, ucxtag::kSameHost),
                  ucxtag::make(world_id_, r, ucxtag::kSameHost), p.reads, ring.get());
    p.ring = std::move(ring);
  }
}

bool UcxWorld::sameHostHellosIn() const {
  return hellos_->in([this](int peer) { return peers_[static_cast<size_t>(peer)].link->failed(); });
}

void UcxWorld::chooseChannels() {
  UcxChannelHost& host = *this;
  for (int r = 0; r < size(); ++r) {
    Peer& p = peers_[static_cast<size_t>(r)];
    if (failover_) {
      p.channel = std::make_unique<RailChannel>(host, failover_, p.link, rank_, r);
      continue;
    }
    auto tag = std::make_unique<TagChannel>(host, p.link, rank_, r, world_id_, p.world_id);
    if (!p.same_host_hello) {
      p.channel = std::move(tag);
      continue;
    }
    const std::string who = "rank " + std::to_string(r) + " (pid " + std::to_string(p.link->pid()) + ")";
    if (p.link->failed()) throw Error(Status::Backend, "world rendezvous: " + who + " is unreachable: " + p.link->failure());
    std::unique_ptr<samehost::RingPair> ring = std::move(p.ring);
    const RingHellos::Taken taken = hellos_->take(r, who, p.reads, ring.get(), engine().pidfdOf(p.link->pid()));
    p.reads = taken.reads;  // else it sends over UCX
    if (!taken.reads && !taken.lends) {
      p.channel = std::move(tag);
      continue;
    }
    p.channel = std::make_unique<RingChannel>(host, std::move(tag), std::move(ring), taken.reads, taken.lends, r,
                                              same_host_min_bytes_);
  }
  hellos_.reset();  // each was received; a send UCX still holds ends on its own
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

}  // namespace mw
