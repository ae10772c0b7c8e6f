#include "tests/support/traffic.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tests/support/mw_test.h"

namespace mwtest {

namespace {

uint32_t word(int world, int sender, int64_t seq, size_t i) {
  uint64_t x = (static_cast<uint64_t>(world) << 48) ^ (static_cast<uint64_t>(sender) << 40) ^
               (static_cast<uint64_t>(seq) << 12) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

struct Lane {
  TrafficWorld spec;
  mw_world_t* world = nullptr;
  bool broken = false;
  std::vector<uint32_t> out, in;
  int64_t sent = 0, got = 0;
  mw_request_t* send_req = nullptr;
  mw_request_t* recv_req = nullptr;
};

// user_data: world index * 2 + (0 send, 1 recv)
bool postSend(Lane& l) {
  for (size_t i = 0; i < l.out.size(); ++i) l.out[i] = word(l.spec.index, l.spec.rank, l.sent, i);
  if (mw_send_async(l.world, l.out.data(), l.out.size(), MW_UINT32, 1 - l.spec.rank, &l.send_req) != MW_OK) {
    l.send_req = nullptr;
    return false;
  }
  mw_request_set_user_data(l.send_req, static_cast<uint64_t>(l.spec.index) * 2);
  return true;
}

bool postRecv(Lane& l) {
  if (mw_recv_async(l.world, l.in.data(), l.in.size(), MW_UINT32, 1 - l.spec.rank, &l.recv_req) != MW_OK) {
    l.recv_req = nullptr;
    return false;
  }
  mw_request_set_user_data(l.recv_req, static_cast<uint64_t>(l.spec.index) * 2 + 1);
  return true;
}

// A break shows up as a failed request or as an event, whichever comes
// first; only the event names the peer to blame.
void markBroken(Lane& l, WorldStats& ws) {
  if (l.broken) return;
  l.broken = true;
  int64_t zero = 0;
  ws.broken_at_ns.compare_exchange_strong(zero, monotonicNs());
}

}  // namespace

int runTraffic(const std::string& redis_url, const std::vector<TrafficWorld>& worlds, ProcStats& stats,
               const std::atomic<int>& stop, const std::vector<std::pair<std::string, std::string>>& settings,
               size_t message_bytes) {
  mw_context_t* ctx = newContext(redis_url, settings);
  MWT_REQUIRE(ctx);
  std::vector<Lane> lanes(worlds.size());
  for (size_t i = 0; i < worlds.size(); ++i) {
    lanes[i].spec = worlds[i];
    lanes[i].out.resize(message_bytes / 4);
    lanes[i].in.resize(message_bytes / 4);
    MWT_CHECK(mw_world_create(ctx, worlds[i].name.c_str(), worlds[i].rank, 2, mwtest::hostBackend(), 0, 30000,
                              &lanes[i].world));
  }
  auto laneOf = [&](uint64_t user_data) -> Lane* {
    for (auto& l : lanes) {
      if (static_cast<uint64_t>(l.spec.index) == user_data / 2) return &l;
    }
    return nullptr;
  };
  for (auto& l : lanes) {
    MWT_REQUIRE(postRecv(l) && postSend(l));
  }
  stats.ready.store(1);

  mw_completion_t done[16];
  while (!stop.load()) {
    size_t n = 0;
    MWT_CHECK(mw_poll(ctx, done, 16, 50, &n));
    for (size_t k = 0; k < n; ++k) {
      Lane* l = laneOf(done[k].user_data);
      MWT_REQUIRE(l != nullptr);
      bool is_recv = done[k].user_data % 2 == 1;
      (is_recv ? l->recv_req : l->send_req) = nullptr;
      mw_request_free(done[k].request);
      WorldStats& ws = stats.worlds[l->spec.index];
      if (done[k].status == MW_ERR_WORLD_BROKEN) {
        markBroken(*l, ws);
        continue;
      }
      if (done[k].status != MW_OK) {
        std::fprintf(stderr, "traffic %s: status %s\n", l->spec.name.c_str(), mw_status_string(done[k].status));
        stats.errors.fetch_add(1);
        continue;
      }
      if (l->broken) continue;
      if (is_recv) {
        for (size_t i = 0; i < l->in.size(); ++i) {
          if (l->in[i] != word(l->spec.index, 1 - l->spec.rank, l->got, i)) {
            stats.corrupt.fetch_add(1);
            std::fprintf(stderr, "traffic %s: message %lld corrupt at word %zu\n", l->spec.name.c_str(),
                         static_cast<long long>(l->got), i);
            break;
          }
        }
        ++l->got;
        ws.received.store(l->got);
        if (!postRecv(*l)) markBroken(*l, ws);
      } else {
        ++l->sent;
        if (!postSend(*l)) markBroken(*l, ws);
      }
    }
    mw_event_t ev;
    while (mw_next_event(ctx, &ev, 0) == MW_OK) {
      if (ev.type == MW_EVENT_STORE_DOWN) stats.store_down.fetch_add(1);
      if (ev.type == MW_EVENT_STORE_UP) stats.store_up.fetch_add(1);
      if (ev.type != MW_EVENT_WORLD_BROKEN) continue;
      // Says why in a failing test's output.
      std::fprintf(stderr, "pid %d: world '%s' broke, blaming rank %d: %s\n", static_cast<int>(getpid()),
                   ev.world_name, ev.peer_rank, ev.detail);
      for (auto& l : lanes) {
        if (!l.world || ev.world != l.world) continue;
        markBroken(l, stats.worlds[l.spec.index]);
        int none = -2;
        stats.worlds[l.spec.index].blamed.compare_exchange_strong(none, ev.peer_rank);
      }
    }
    // Re-form worlds the parent asked for: destroy the broken incarnation,
    // create the name again and exchange one checked message.
    for (auto& l : lanes) {
      WorldStats& ws = stats.worlds[l.spec.index];
      if (!l.broken || !ws.reform.load() || ws.reformed.load()) continue;
      if (l.send_req || l.recv_req) continue;  // completions still to come
      MWT_CHECK(mw_world_destroy(l.world));
      MWT_CHECK(mw_world_create(ctx, l.spec.name.c_str(), l.spec.rank, 2, mwtest::hostBackend(), 0, 30000, &l.world));
      uint32_t ping = 0xC0FFEE00u + static_cast<uint32_t>(l.spec.rank), pong = 0;
      mw_request_t *s, *r;
      MWT_CHECK(mw_recv_async(l.world, &pong, 1, MW_UINT32, 1 - l.spec.rank, &r));
      MWT_CHECK(mw_send_async(l.world, &ping, 1, MW_UINT32, 1 - l.spec.rank, &s));
      MWT_CHECK(mw_wait(s, 10000));
      MWT_CHECK(mw_wait(r, 10000));
      mw_request_free(s);
      mw_request_free(r);
      MWT_REQUIRE(pong == 0xC0FFEE00u + static_cast<uint32_t>(1 - l.spec.rank));
      ws.reformed.store(1);
    }
  }
  // Requests still pending are cancelled by destroy; their buffers stay
  // alive until then.
  for (auto& l : lanes) {
    if (l.world) mw_world_destroy(l.world);
    mw_request_free(l.send_req);
    mw_request_free(l.recv_req);
  }
  mw_context_free(ctx);
  return 0;
}

}  // namespace mwtest
