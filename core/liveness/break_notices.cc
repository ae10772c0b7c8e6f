#include "core/liveness/break_notices.h"

#include "core/store/incarnation_scripts.h"
#include "core/store/script_helpers.h"
#include "core/store/redis_values.h"

namespace mw {
namespace {

constexpr size_t kMaxNotices = 4096;

// Adds a rank to an incarnation's blamed set (KEYS[2], ARGV[3]; '' adds
// none) unless the key holds something else.
constexpr const char* kBlame = R"lua(
local t = redis.call('TYPE', KEYS[2])['ok']
if ARGV[3] ~= '' and (t == 'set' or t == 'none') then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
)lua";

// Both scripts leave a meta record of another type or epoch alone, and
// read no field longer than an epoch. KEYS = meta, blamed set; ARGV =
// epoch, detail, the rank to blame, ttl.
const std::string& leftScript() {
  static const std::string script = std::string(kBlame) + R"lua(
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HSTRLEN', KEYS[1], 'epoch') <= 15 and
   redis.call('HSTRLEN', KEYS[1], 'state') <= 15 and redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] and
   redis.call('HGET', KEYS[1], 'state') == 'ready' then
  redis.call('HSET', KEYS[1], 'state', 'left', 'detail', ARGV[2])
end
return 1
)lua";
  return script;
}

// The durable marker outlives a short disconnection of any member; the
// world's meta record shows the break to `multiworld status`. KEYS =
// meta, blamed set, marker; ARGV = epoch, detail, the rank to blame, ttl,
// the marker.
const std::string& markScript() {
  static const std::string script = std::string(kBlame) + R"lua(
redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[4])
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HSTRLEN', KEYS[1], 'epoch') <= 15 and
   redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'state', 'broken', 'detail', ARGV[2])
end
return 1
)lua";
  return script;
}

// A member of a shrink's or grow's attempt is lost: as markScript plus
// the notice and the formation's wake-up (abortWaits), all only while the
// attempt has not formed; once every member committed, a member lost is
// the new world's to judge, by its own liveness. KEYS = meta, the old
// epoch's blamed set, the attempt's marker; ARGV = the attempt's epoch,
// detail, the old rank to blame, ttl, the marker, the events channel, the
// notice, the world's epoch key base, the attempt's size.
const std::string& lostScript() {
  static const std::string script = std::string(scripts::helpers()) + kBlame + R"lua(
local size = count(ARGV[9], 2147483647) or 1
local ours = redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HSTRLEN', KEYS[1], 'epoch') <= 15 and
             redis.call('HSTRLEN', KEYS[1], 'committed') <= 15 and redis.call('HGET', KEYS[1], 'epoch') == ARGV[1]
if ours and (count(redis.call('HGET', KEYS[1], 'committed') or '', 2147483647) or 0) >= size then return 0 end
redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[4])
if ours then redis.call('HSET', KEYS[1], 'state', 'broken', 'detail', ARGV[2]) end
redis.call('PUBLISH', ARGV[6], ARGV[7])
abortWaits(ARGV[8], ARGV[1], 'err:' .. ARGV[2], ARGV[4], size + 8)
return 1
)lua";
  return script;
}

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
        conn.append({"EVAL", leftScript(), "2", keys.worldMeta(n.world), keys.worldEpoch(n.world, n.epoch, "blamed"),
                     std::to_string(n.epoch), "rank " + std::to_string(n.detector) + " left",
                     std::to_string(n.detector), ttl});
        ++replies;
        continue;
      }
      BreakNotice notice{n.world, n.epoch, BreakMarker{n.peer, n.detector, n.detail}};
      if (n.blame_epoch != 0) {
        conn.append({"EVAL", lostScript(), "3", keys.worldMeta(n.world),
                     keys.worldEpoch(n.world, n.blame_epoch, "blamed"), keys.worldEpoch(n.world, n.epoch, "broken"),
                     std::to_string(n.epoch), n.detail, n.blame_rank >= 0 ? std::to_string(n.blame_rank) : "", ttl,
                     formatBreakMarker(notice.marker), keys.eventsChannel(), formatBreakNotice(notice),
                     keys.worldEpochBase(n.world), std::to_string(n.size)});
        ++replies;
        continue;
      }
      // A member that gave up blames itself only for its own formation.
      const bool blames = n.peer >= 0 && !n.gave_up;
      conn.append({"EVAL", markScript(), "3", keys.worldMeta(n.world), keys.worldEpoch(n.world, n.epoch, "blamed"),
                   keys.worldEpoch(n.world, n.epoch, "broken"), std::to_string(n.epoch), n.detail,
                   blames ? std::to_string(n.peer) : "", ttl, formatBreakMarker(notice.marker)});
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
