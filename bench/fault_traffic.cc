#include "bench/fault_traffic.h"

#include <cstdio>

namespace mwbench {

void LaneStats::reset() {
  received.store(0);
  broken_at_ns.store(0);
  broken_by.store(0);
  blamed.store(-2);
  corrupt.store(0);
  errors.store(0);
}

bool LaneStats::markBroken(int by) {
  int64_t zero = 0;
  if (!broken_at_ns.compare_exchange_strong(zero, monotonicNs())) return false;
  broken_by.store(by);
  return true;
}

void LaneStats::noteBlamed(int peer_rank) {
  int none = -2;
  blamed.compare_exchange_strong(none, peer_rank);
}

mw_context_t* newBenchContext(const std::vector<std::pair<std::string, std::string>>& settings) {
  mw_config_t* cfg = nullptr;
  if (mw_config_new(&cfg) != MW_OK) {
    std::fprintf(stderr, "mw_config_new: %s\n", mw_last_error());
    return nullptr;
  }
  for (const auto& [key, value] : settings) {
    if (mw_config_set(cfg, key.c_str(), value.c_str()) != MW_OK) {
      std::fprintf(stderr, "mw_config_set %s=%s: %s\n", key.c_str(), value.c_str(), mw_last_error());
      mw_config_free(cfg);
      return nullptr;
    }
  }
  mw_context_t* ctx = nullptr;
  if (mw_context_new(cfg, &ctx) != MW_OK) {
    std::fprintf(stderr, "mw_context_new: %s\n", mw_last_error());
    ctx = nullptr;
  }
  mw_config_free(cfg);
  return ctx;
}

namespace {

constexpr uint64_t kRecvBit = 1ULL << 31;

uint32_t mix(int world_id, int sender, int64_t seq) {
  uint64_t x = (static_cast<uint64_t>(world_id) << 56) ^ (static_cast<uint64_t>(sender) << 48) ^
               static_cast<uint64_t>(seq);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Message `seq` from `sender`: word i is base + i * K (mod 2^32), with a
// base that differs from message to message; cheap enough for 64 KiB
// messages at full speed, and a stale, shifted or foreign buffer fails it.
constexpr uint32_t kStep = 0x9E3779B1u;

void fill(std::vector<uint32_t>& buf, int world_id, int sender, int64_t seq) {
  uint32_t v = mix(world_id, sender, seq);
  for (auto& w : buf) {
    w = v;
    v += kStep;
  }
}

// Index of the first wrong word, or buf.size().
std::size_t check(const std::vector<uint32_t>& buf, int world_id, int sender, int64_t seq) {
  uint32_t v = mix(world_id, sender, seq);
  for (std::size_t i = 0; i < buf.size(); ++i, v += kStep) {
    if (buf[i] != v) return i;
  }
  return buf.size();
}

}  // namespace

Lane::Lane(mw_world_t* world, uint32_t tag, int world_id, int rank, std::size_t message_bytes,
           std::size_t window, LaneStats& stats)
    : world_(world), tag_(tag), world_id_(world_id), rank_(rank), stats_(stats), sends_(window), recvs_(window) {
  const std::size_t words = message_bytes / 4;
  for (auto& s : sends_) s.buf.assign(words, 0);
  for (auto& s : recvs_) s.buf.assign(words, 0);
}

Lane::~Lane() { releaseAfterDestroy(); }

void Lane::start() {
  for (std::size_t i = 0; i < recvs_.size() && !broken_; ++i) postRecv(i);
  for (std::size_t i = 0; i < sends_.size() && !broken_; ++i) postSend(i);
}

bool Lane::broken() const { return broken_ || stats_.broken_at_ns.load() != 0; }

void Lane::failedPost(mw_status_t s, const char* what) {
  if (s == MW_ERR_WORLD_BROKEN) {
    // "On a broken world these fail at once": the call itself is the sign.
    stats_.markBroken(LaneStats::kByRequest);
  } else {
    std::fprintf(stderr, "mw_bench faults: %s on world %d: %s (%s)\n", what, world_id_, mw_status_string(s),
                 mw_last_error());
    stats_.errors.fetch_add(1);
  }
  broken_ = true;  // stop posting on this lane either way
}

void Lane::postSend(std::size_t i) {
  Slot& s = sends_[i];
  s.seq = next_send_++;
  fill(s.buf, world_id_, rank_, s.seq);
  mw_status_t st = mw_send_async(world_, s.buf.data(), s.buf.size(), MW_UINT32, 1 - rank_, &s.req);
  if (st != MW_OK) {
    s.req = nullptr;
    failedPost(st, "mw_send_async");
    return;
  }
  mw_request_set_user_data(s.req, (static_cast<uint64_t>(tag_) << 32) | i);
}

void Lane::postRecv(std::size_t i) {
  Slot& s = recvs_[i];
  // Transfers of one world match in issue order: the n-th receive posted
  // gets the peer's n-th message.
  s.seq = next_recv_++;
  mw_status_t st = mw_recv_async(world_, s.buf.data(), s.buf.size(), MW_UINT32, 1 - rank_, &s.req);
  if (st != MW_OK) {
    s.req = nullptr;
    failedPost(st, "mw_recv_async");
    return;
  }
  mw_request_set_user_data(s.req, (static_cast<uint64_t>(tag_) << 32) | kRecvBit | i);
}

void Lane::complete(const mw_completion_t& c) {
  const bool is_recv = (c.user_data & kRecvBit) != 0;
  const std::size_t i = static_cast<std::size_t>(c.user_data & (kRecvBit - 1));
  auto& slots = is_recv ? recvs_ : sends_;
  if (i < slots.size() && slots[i].req == c.request) slots[i].req = nullptr;
  mw_request_free(c.request);
  if (i >= slots.size()) {
    std::fprintf(stderr, "mw_bench faults: completion with a bad slot %zu on world %d\n", i, world_id_);
    stats_.errors.fetch_add(1);
    return;
  }
  if (c.status == MW_ERR_WORLD_BROKEN) {
    stats_.markBroken(LaneStats::kByRequest);
    broken_ = true;
    return;
  }
  if (c.status == MW_ERR_CANCELLED) return;  // our own destroy
  if (c.status != MW_OK) {
    std::fprintf(stderr, "mw_bench faults: %s on world %d completed with %s\n", is_recv ? "recv" : "send",
                 world_id_, mw_status_string(c.status));
    stats_.errors.fetch_add(1);
    broken_ = true;
    return;
  }
  if (is_recv) {
    Slot& s = recvs_[i];
    std::size_t bad = check(s.buf, world_id_, 1 - rank_, s.seq);
    if (bad != s.buf.size() && stats_.corrupt.fetch_add(1) < 5) {
      std::fprintf(stderr, "mw_bench faults: world %d: message %lld from rank %d is wrong at word %zu\n", world_id_,
                   static_cast<long long>(s.seq), 1 - rank_, bad);
    }
    stats_.received.fetch_add(1);
  }
  if (broken()) return;
  if (is_recv) {
    postRecv(i);
  } else {
    postSend(i);
  }
}

void Lane::releaseAfterDestroy() {
  for (auto* slots : {&sends_, &recvs_}) {
    for (auto& s : *slots) {
      mw_request_free(s.req);
      s.req = nullptr;
    }
  }
}

}  // namespace mwbench
