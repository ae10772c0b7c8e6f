#include "core/watchdog.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/log.h"
#include "core/redis_values.h"
#include "core/signals.h"
#include "core/world.h"

namespace mw {
namespace {

constexpr size_t kMaxNotices = 4096;
constexpr std::chrono::milliseconds kFirstBackoff{25};
constexpr int kRefreshEveryTicks = 10;

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

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Members retry often enough that, once Redis is back, they all return
// within this much of each other; that spread is part of the grace below.
std::chrono::milliseconds maxBackoff(const Config& cfg) {
  return std::clamp<std::chrono::milliseconds>(cfg.heartbeat_interval * 2, std::chrono::milliseconds(50),
                                               std::chrono::milliseconds(250));
}

long long unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::chrono::milliseconds worldKeyTtl(const Config& cfg) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(60), cfg.heartbeat_timeout * 10);
}

}  // namespace

Watchdog::Watchdog(const Config& cfg, const RedisUrl& url, const Keys& keys, std::string member_id,
                   EventQueue& events)
    : cfg_(cfg),
      url_(url),
      keys_(keys),
      member_(std::move(member_id)),
      host_(hostName()),
      events_(events),
      liveness_(cfg.heartbeat_timeout, cfg.heartbeat_interval) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw Error(Status::Internal, "eventfd failed");
  try {
    connect();
  } catch (...) {
    ::close(wake_fd_);
    throw;
  }
  last_tick_ = Clock::now();
  SigpipeBlockedForNewThreads no_sigpipe;
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wakeUp();
  thread_.join();
  // Notices of worlds destroyed on the way out still go out; a clean exit
  // also takes our heartbeat with us, so peers need not wait for its TTL
  // before they may take over ranks this process claimed.
  if (cmd_) {
    try {
      publishNotices();
      cmd_->command({"DEL", keys_.heartbeat(member_)});
    } catch (...) {
    }
  }
  ::close(wake_fd_);
}

void Watchdog::watch(const std::shared_ptr<World>& w) {
  std::lock_guard<std::mutex> lock(m_);
  worlds_[w.get()] = Watched{w, w->name(), w->epoch(), w->rank(), w->members()};
}

void Watchdog::unwatch(const World* w) {
  std::lock_guard<std::mutex> lock(m_);
  worlds_.erase(w);
}

void Watchdog::announce(const World& w, int peer_rank, const std::string& detail) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (notices_.size() >= kMaxNotices) notices_.pop_front();
    notices_.push_back(Notice{w.name(), w.epoch(), w.rank(), peer_rank, detail});
  }
  wakeUp();
}

void Watchdog::recordLeft(const World& w) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (notices_.size() >= kMaxNotices) notices_.pop_front();
    notices_.push_back(Notice{w.name(), w.epoch(), w.rank(), w.rank(), "", true});
  }
  wakeUp();
}

bool Watchdog::storeUp() const {
  std::lock_guard<std::mutex> lock(m_);
  return store_up_;
}

// The beat counts refreshes, so every value differs from the last; host,
// pid and time are for people reading Redis (multiworld status).
std::string Watchdog::heartbeatValue() {
  return formatHeartbeat(Heartbeat{++beat_, host_, static_cast<long long>(getpid()), unixMs()});
}

void Watchdog::wakeUp() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter already means "wake up"
}

void Watchdog::connect() {
  auto cmd = RedisConnection::connect(url_, cfg_.store_timeout);
  auto sub = RedisConnection::connect(url_, cfg_.store_timeout);
  auto r = sub->command({"SUBSCRIBE", keys_.eventsChannel()});
  if (!r || replyIsError(r.get())) throw Error(Status::Store, "SUBSCRIBE failed: " + cappedText(replyString(r.get())));
  auto hb = cmd->command({"SET", keys_.heartbeat(member_), heartbeatValue(),
                          "PX", std::to_string(cfg_.heartbeat_timeout.count())});
  if (replyIsError(hb.get())) throw Error(Status::Store, "heartbeat failed: " + cappedText(replyString(hb.get())));
  cmd_ = std::move(cmd);
  sub_ = std::move(sub);
  backoff_ = kFirstBackoff;
  // After an outage (Redis may have restarted empty) peers need time to
  // write their heartbeats again; they come back up to one backoff after
  // us, and write within one interval of that.
  judge_after_ = Clock::now() + maxBackoff(cfg_) + 2 * cfg_.heartbeat_interval;
  bool was_down;
  {
    std::lock_guard<std::mutex> lock(m_);
    was_down = !store_up_;
    store_up_ = true;
  }
  if (was_down) {
    MW_LOG(LogLevel::Warn, "redis %s is reachable again", url_.redacted().c_str());
    events_.push(Event{Event::Type::StoreUp, nullptr, "", -1, Status::Ok, "redis reachable again"});
  }
}

void Watchdog::disconnect(const std::string& why) {
  cmd_.reset();
  sub_.reset();
  next_reconnect_ = Clock::now() + backoff_;
  backoff_ = std::min(backoff_ * 2, maxBackoff(cfg_));
  bool was_up;
  {
    std::lock_guard<std::mutex> lock(m_);
    was_up = store_up_;
    store_up_ = false;
  }
  if (was_up) {
    MW_LOG(LogLevel::Warn, "redis unreachable, worlds keep running: %s", why.c_str());
    events_.push(Event{Event::Type::StoreDown, nullptr, "", -1, Status::Store, why.substr(0, 255)});
  }
}

void Watchdog::run() {
  pthread_setname_np(pthread_self(), "mw-watchdog");
  Clock::time_point next_tick = Clock::now() + cfg_.heartbeat_interval;
  for (;;) {
    auto now = Clock::now();
    Clock::time_point wake_at = next_tick;
    if (!cmd_) wake_at = std::min(wake_at, next_reconnect_);
    int timeout_ms = static_cast<int>(
        std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count() + 1));

    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {sub_ ? sub_->fd() : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, timeout_ms);
    if (n > 0 && (fds[0].revents & POLLIN)) {
      uint64_t v;
      ssize_t got = ::read(wake_fd_, &v, sizeof v);
      (void)got;
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stop_) return;
    }
    try {
      if (!cmd_ && Clock::now() >= next_reconnect_) connect();
      if (sub_ && n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) drainSubscriber();
      if (cmd_) publishNotices();
      if (Clock::now() >= next_tick) {
        if (cmd_) tick();
        last_tick_ = Clock::now();
        next_tick = std::max(next_tick + cfg_.heartbeat_interval, Clock::now());
      }
    } catch (const Error& e) {
      if (cmd_ || sub_) {
        disconnect(e.what());
      } else {
        next_reconnect_ = Clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, maxBackoff(cfg_));
      }
    }
  }
}

void Watchdog::drainSubscriber() {
  for (auto& reply : sub_->readAvailable()) {
    const redisReply* r = reply.get();
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) continue;
    if (replyString(r->element[0]) != "message") continue;
    handleNotice(replyString(r->element[2]));
  }
}

void Watchdog::handleNotice(const std::string& payload) {
  auto notice = parseBreakNotice(payload);
  if (!notice) return;  // not ours to understand; nothing from Redis may hurt us
  breakWorlds(notice->world, notice->epoch, notice->marker.peer,
              "rank " + std::to_string(notice->marker.detector) +
                  " reported the world broken: " + notice->marker.detail,
              false);
}

void Watchdog::breakWorlds(const std::string& name, uint64_t epoch, int peer, const std::string& detail,
                           bool announce) {
  std::vector<std::shared_ptr<World>> hit;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& [ptr, w] : worlds_) {
      if (w.name == name && w.epoch == epoch) {
        if (auto sp = w.world.lock()) hit.push_back(std::move(sp));
      }
    }
  }
  for (auto& w : hit) {
    int blamed = (peer >= 0 && peer < w->size()) ? peer : -1;
    w->breakWorld(blamed, detail, announce);
  }
}

void Watchdog::publishNotices() {
  std::deque<Notice> batch;
  {
    std::lock_guard<std::mutex> lock(m_);
    batch.swap(notices_);
  }
  if (batch.empty()) return;
  const std::string ttl = std::to_string(worldKeyTtl(cfg_).count());
  try {
    size_t replies = 0;
    for (const auto& n : batch) {
      if (n.left) {
        cmd_->append({"EVAL", kLeftScript, "1", keys_.worldMeta(n.world), std::to_string(n.epoch),
                      "rank " + std::to_string(n.detector) + " left"});
        ++replies;
        continue;
      }
      BreakNotice notice{n.world, n.epoch, BreakMarker{n.peer, n.detector, n.detail}};
      cmd_->append({"EVAL", kMarkScript, "2", keys_.worldMeta(n.world),
                    keys_.worldEpoch(n.world, n.epoch, "broken"), std::to_string(n.epoch),
                    formatBreakMarker(notice.marker), ttl, n.detail});
      cmd_->append({"PUBLISH", keys_.eventsChannel(), formatBreakNotice(notice)});
      replies += 2;
    }
    for (size_t i = 0; i < replies; ++i) cmd_->readReply();
  } catch (...) {
    // Not delivered: keep them for after the reconnection.
    std::lock_guard<std::mutex> lock(m_);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) notices_.push_front(*it);
    throw;
  }
}

void Watchdog::tick() {
  std::vector<Watched> worlds;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& [ptr, w] : worlds_) worlds.push_back(w);
  }
  std::set<std::string> members;
  for (const auto& w : worlds) {
    for (size_t r = 0; r < w.members.size(); ++r) {
      if (static_cast<int>(r) != w.rank && w.members[r] != member_) members.insert(w.members[r]);
    }
  }
  std::vector<std::string> member_list(members.begin(), members.end());

  cmd_->append({"SET", keys_.heartbeat(member_), heartbeatValue(), "PX",
                std::to_string(cfg_.heartbeat_timeout.count())});
  if (!member_list.empty()) {
    std::vector<std::string> mget = {"MGET"};
    for (const auto& m : member_list) mget.push_back(keys_.heartbeat(m));
    cmd_->append(mget);
  }
  if (!worlds.empty()) {
    std::vector<std::string> mget = {"MGET"};
    for (const auto& w : worlds) mget.push_back(keys_.worldEpoch(w.name, w.epoch, "broken"));
    cmd_->append(mget);
  }
  size_t refreshes = 0;
  if (++ticks_ % kRefreshEveryTicks == 0) {
    const std::string ttl = std::to_string(worldKeyTtl(cfg_).count());
    for (const auto& w : worlds) {
      cmd_->append({"PEXPIRE", keys_.worldMeta(w.name), ttl});
      cmd_->append({"PEXPIRE", keys_.worldEpoch(w.name, w.epoch, "members"), ttl});
      refreshes += 2;
    }
  }

  auto hb = cmd_->readReply();
  if (replyIsError(hb.get())) throw Error(Status::Store, "heartbeat: " + cappedText(replyString(hb.get())));
  RedisReply beats(nullptr, freeRedisReply), markers(nullptr, freeRedisReply);
  if (!member_list.empty()) beats = cmd_->readReply();
  if (!worlds.empty()) markers = cmd_->readReply();
  for (size_t i = 0; i < refreshes; ++i) cmd_->readReply();
  // Reads refused (an ACL without MGET, say) would leave peers unwatched:
  // that is a store failure, reported as one.
  for (const RedisReply* r : {&beats, &markers}) {
    if (replyIsError(r->get())) throw Error(Status::Store, "reading heartbeats: " + cappedText(replyString(r->get())));
  }

  auto now = Clock::now();
  // If this thread itself was held up (CPU starvation, SIGSTOP, a Redis
  // that stalled for everyone), missing heartbeats say nothing about the
  // peers yet: give them a moment to write again.
  if (now - last_tick_ > cfg_.heartbeat_timeout / 2) {
    judge_after_ = std::max(judge_after_, now + 2 * cfg_.heartbeat_interval);
  }

  if (markers && markers->type == REDIS_REPLY_ARRAY && markers->elements == worlds.size()) {
    for (size_t i = 0; i < worlds.size(); ++i) {
      const redisReply* m = markers->element[i];
      if (!m || m->type != REDIS_REPLY_STRING) continue;
      // Any value under the key is a break, even one we cannot read.
      auto marker = parseBreakMarker(std::string_view(m->str, m->len));
      std::string detail = marker ? "rank " + std::to_string(marker->detector) +
                                        " reported the world broken: " + marker->detail
                                  : "its break marker in Redis reads '" +
                                        cappedText(std::string_view(m->str, m->len)) + "'";
      breakWorlds(worlds[i].name, worlds[i].epoch, marker ? marker->peer : -1, detail, false);
    }
  }

  std::map<std::string, std::optional<std::string_view>> dead;
  if (beats && beats->type == REDIS_REPLY_ARRAY && beats->elements == member_list.size()) {
    for (size_t i = 0; i < member_list.size(); ++i) {
      const redisReply* b = beats->element[i];
      std::optional<std::string_view> value;
      if (b && b->type == REDIS_REPLY_STRING) value = std::string_view(b->str, b->len);
      if (liveness_.overdue(member_list[i], value, now) && now >= judge_after_) dead[member_list[i]] = value;
    }
  }
  liveness_.retain(members);
  for (const auto& w : worlds) {
    for (size_t r = 0; r < w.members.size(); ++r) {
      auto found = dead.find(w.members[r]);
      if (static_cast<int>(r) == w.rank || found == dead.end()) continue;
      breakWorlds(w.name, w.epoch, static_cast<int>(r),
                  liveness_.describe(static_cast<int>(r), found->first, found->second, now), true);
      break;
    }
  }
}

}  // namespace mw
