#include "bench/soak/soak_pinger.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "tools/lab/checked_traffic.h"
#include "tools/lab/redis_client.h"

namespace mwbench {
namespace soak {

namespace {

constexpr auto kEvery = std::chrono::milliseconds(20);
constexpr auto kCommandLimit = std::chrono::milliseconds(1000);

// The master the first answering sentinel names, as a connection; null
// when none answers.
std::unique_ptr<mwlab::RedisClient> connectMaster(const PingerSpec& spec) {
  for (int port : spec.sentinel_ports) {
    mwlab::RedisClient sentinel(spec.host, port, "", kCommandLimit);
    auto r = sentinel.cmd({"SENTINEL", "get-master-addr-by-name", spec.master_name});
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) continue;
    const std::string host(r->element[0]->str, r->element[0]->len);
    auto c = std::make_unique<mwlab::RedisClient>(host, std::atoi(r->element[1]->str), "", kCommandLimit);
    if (c->ok()) return c;
  }
  return nullptr;
}

}  // namespace

int runPinger(const PingerSpec& spec, PingBoard& board) {
  std::unique_ptr<mwlab::RedisClient> master;
  while (!board.stop.load()) {
    std::this_thread::sleep_for(kEvery);
    if (board.quiet.load()) {
      master.reset();  // the master may change meanwhile
      continue;
    }
    if (!master || !master->ok()) master = connectMaster(spec);
    const int64_t t0 = mwlab::monotonicNs();
    mwlab::RedisReplyPtr r = master ? master->cmd({"PING"}) : mwlab::RedisReplyPtr(nullptr, freeReplyObject);
    const int64_t t1 = mwlab::monotonicNs();
    // A Redis fault may have begun while the PING was out.
    if (board.quiet.load()) continue;
    board.pings.fetch_add(1);
    if (!r || r->type != REDIS_REPLY_STATUS) {
      board.failures.fetch_add(1);
      master.reset();
      continue;
    }
    const int64_t us = (t1 - t0) / 1000;
    if (us > static_cast<int64_t>(spec.slow_ms) * 1000) board.slow.fetch_add(1);
    if (us > board.worst_us.load()) {
      board.worst_us.store(us);
      board.worst_at_ns.store(t0);
    }
  }
  return 0;
}

}  // namespace soak
}  // namespace mwbench
