#include "core/liveness/break_notices.h"

#include "core/store/incarnation_scripts.h"
#include "core/store/redis_values.h"

namespace mw {
namespace {

constexpr size_t kMaxNotices = 4096;

// Both scripts leave a meta record of another type or epoch alone, and
// read no field longer than an epoch.
constexpr const char* kLeftScript = R"lua(
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HSTRLEN', KEYS[1], 'epoch') <= 15 and
   redis.call('HSTRLEN', KEYS[1], 'state') <= 15 and redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] and
   redis.call('HGET', KEYS[1], 'state') == 'ready' then
  redis.call('HSET', KEYS[1], 'state', 'left', 'detail', ARGV[2])
end
return 1
)lua";

// The durable marker outlives a short disconnection of any member; the
// world's meta record shows the break to `multiworld status`.
constexpr const char* kMarkScript = R"lua(
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HSTRLEN', KEYS[1], 'epoch') <= 15 and
   redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', 'broken', 'detail', ARGV[4])
end
return 1
)lua";

}  // namespace

void NoticeQueue::push(Notice n) {
  std::lock_guard<std::mutex> lock(m_);
  if (queue_.size() >= kMaxNotices) queue_.pop_front();
  queue_.push_back(std::move(n));
}

void NoticeQueue::deliver(RedisConnection& conn, const Keys& keys, std::chrono::milliseconds marker_ttl) {
  std::deque<Notice> batch;
  {
    std::lock_guard<std::mutex> lock(m_);
    batch.swap(queue_);
  }
  if (batch.empty()) return;
  const std::string ttl = std::to_string(marker_ttl.count());
  try {
    size_t replies = 0;
    for (const auto& n : batch) {
      if (n.left) {
        conn.append({"EVAL", kLeftScript, "1", keys.worldMeta(n.world), std::to_string(n.epoch),
                     "rank " + std::to_string(n.detector) + " left"});
        ++replies;
        continue;
      }
      BreakNotice notice{n.world, n.epoch, BreakMarker{n.peer, n.detector, n.detail}};
      conn.append({"EVAL", kMarkScript, "2", keys.worldMeta(n.world), keys.worldEpoch(n.world, n.epoch, "broken"),
                   std::to_string(n.epoch), formatBreakMarker(notice.marker), ttl, n.detail});
      conn.append({"PUBLISH", keys.eventsChannel(), formatBreakNotice(notice)});
      replies += 2;
      if (n.gave_up) {
        conn.append({"EVAL", scripts::abortFormation(), "1", keys.worldMeta(n.world), keys.worldEpochBase(n.world),
                     std::to_string(n.epoch), n.detail, ttl, std::to_string(n.size)});
        ++replies;
      }
    }
    for (size_t i = 0; i < replies; ++i) conn.readReply();
  } catch (...) {
    std::lock_guard<std::mutex> lock(m_);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) queue_.push_front(std::move(*it));
    while (queue_.size() > kMaxNotices) queue_.pop_front();
    throw;
  }
}

}  // namespace mw
