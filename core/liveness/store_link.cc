#include "core/liveness/store_link.h"

#include <algorithm>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {
constexpr std::chrono::milliseconds kFirstPause{25};
constexpr std::chrono::seconds kWatchRetry{1};
}  // namespace

std::chrono::milliseconds StoreLink::maxPause(const Config& cfg) {
  return std::clamp<std::chrono::milliseconds>(cfg.heartbeat_interval * 2, std::chrono::milliseconds(50),
                                               std::chrono::milliseconds(250));
}

StoreLink::StoreLink(const Config& cfg, RedisConnector& connector, const Keys& keys, EventQueue& events)
    : cfg_(cfg), connector_(connector), keys_(keys), events_(events), pause_(kFirstPause) {}

StoreLink::~StoreLink() = default;

StoreLink::Connected StoreLink::connect(const std::function<void(RedisConnection&)>& greet) {
  auto cmd = connector_.connect();
  auto sub = connector_.connect();
  auto r = sub->command({"SUBSCRIBE", keys_.eventsChannel()});
  if (!r || replyIsError(r.get())) throw Error(Status::Store, "SUBSCRIBE failed: " + cappedText(replyString(r.get())));
  greet(*cmd);
  Connected how;
  how.master_changed = !master_.empty() && cmd->url() != master_;
  master_ = cmd->url();
  cmd_ = std::move(cmd);
  sub_ = std::move(sub);
  pause_ = kFirstPause;
  if (connector_.viaSentinel()) keepWatching();
  {
    std::lock_guard<std::mutex> lock(m_);
    how.ended_outage = !up_;
    up_ = true;
  }
  if (how.ended_outage) {
    MW_LOG(LogLevel::Warn, "redis %s is reachable again%s", master_.c_str(),
           how.master_changed ? " (a new master)" : "");
    events_.push(Event{Event::Type::StoreUp, nullptr, "", -1, Status::Ok,
                       how.master_changed ? "redis reachable again: new master " + master_ : "redis reachable again", {}});
  }
  return how;
}

void StoreLink::lost(const std::string& why, bool retry_at_once) {
  cmd_.reset();
  sub_.reset();
  // Whatever the pool holds may point at a dead or demoted master.
  connector_.invalidate();
  retryLater();
  if (retry_at_once) next_attempt_ = Clock::now();
  bool was_up;
  {
    std::lock_guard<std::mutex> lock(m_);
    was_up = up_;
    up_ = false;
  }
  if (was_up) {
    MW_LOG(LogLevel::Warn, "redis unreachable, worlds keep running: %s", why.c_str());
    events_.push(Event{Event::Type::StoreDown, nullptr, "", -1, Status::Store, why.substr(0, 255), {}});
  }
}

void StoreLink::retryLater() {
  next_attempt_ = Clock::now() + pause_;
  pause_ = std::min(pause_ * 2, maxPause(cfg_));
}

int StoreLink::subscriberFd() const { return sub_ ? sub_->fd() : -1; }

std::vector<std::string> StoreLink::messages() {
  std::vector<std::string> out;
  if (!sub_) return out;
  for (auto& reply : sub_->readAvailable()) {
    const redisReply* r = reply.get();
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) continue;
    if (replyString(r->element[0]) != "message") continue;
    out.push_back(replyString(r->element[2]));
  }
  return out;
}

std::string StoreLink::masterMoved() {
  if (!watch_) return "";
  std::optional<HostPort> to;
  try {
    to = watch_->switched();
  } catch (const Error& e) {
    MW_LOG(LogLevel::Info, "sentinel watch lost, reopening: %s", e.what());
    watch_.reset();
    return "";
  }
  if (!to) return "";
  const std::string at = connector_.url().master(*to).redacted();
  if (cmd_ && at == master_) return "";  // already there
  return "sentinel announced a new master " + at;
}

void StoreLink::keepWatching() {
  if (watch_ || !connector_.viaSentinel() || Clock::now() < next_watch_attempt_) return;
  next_watch_attempt_ = Clock::now() + kWatchRetry;
  // Short: this runs on the watchdog thread, between heartbeats.
  auto timeout = std::min(cfg_.store_timeout, std::max(cfg_.heartbeat_interval, std::chrono::milliseconds(50)));
  try {
    watch_ = SentinelWatch::open(connector_.url(), timeout);
  } catch (const Error& e) {
    MW_LOG(LogLevel::Info, "cannot watch the sentinels yet: %s", e.what());
  }
}

bool StoreLink::up() const {
  std::lock_guard<std::mutex> lock(m_);
  return up_;
}

}  // namespace mw
