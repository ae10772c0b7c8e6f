#include "tests/support/redis_pinger.h"

#include <chrono>
#include <thread>

#include "tools/lab/redis_client.h"

namespace mwtest {

void startPinger(Workers& workers, const std::string& socket, PingStats& stats) {
  workers.add([socket, &stats] {
    mwlab::RedisClient c(socket);
    if (!c.ok()) return 1;
    while (!stats.stop.load()) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = c.cmd({"PING"});
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
      if (!r || r->type != REDIS_REPLY_STATUS) stats.failures.fetch_add(1);
      if (us > stats.worst_us.load()) stats.worst_us.store(us);
      stats.pings.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  });
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stats.pings.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace mwtest
