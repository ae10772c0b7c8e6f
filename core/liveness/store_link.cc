#include "core/liveness/store_link.h"

#include <algorithm>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/log.h"

namespace mw {
namespace {
constexpr std::chrono::milliseconds kFirstPause{25};
}  // namespace

std::chrono::milliseconds StoreLink::maxPause(const Config& cfg) {
  return std::clamp<std::chrono::milliseconds>(cfg.heartbeat_interval * 2, std::chrono::milliseconds(50),
                                               std::chrono::milliseconds(250));
}

StoreLink::StoreLink(const Config& cfg, RedisUrl url, const Keys& keys, EventQueue& events)
    : cfg_(cfg), url_(std::move(url)), keys_(keys), events_(events), pause_(kFirstPause) {}

bool StoreLink::connect(const std::function<void(RedisConnection&)>& greet) {
  auto cmd = RedisConnection::connect(url_, cfg_.store_timeout);
  auto sub = RedisConnection::connect(url_, cfg_.store_timeout);
  auto r = sub->command({"SUBSCRIBE", keys_.eventsChannel()});
  if (!r || replyIsError(r.get())) throw Error(Status::Store, "SUBSCRIBE failed: " + cappedText(replyString(r.get())));
  greet(*cmd);
  cmd_ = std::move(cmd);
  sub_ = std::move(sub);
  pause_ = kFirstPause;
  bool was_down;
  {
    std::lock_guard<std::mutex> lock(m_);
    was_down = !up_;
    up_ = true;
  }
  if (was_down) {
    MW_LOG(LogLevel::Warn, "redis %s is reachable again", url_.redacted().c_str());
    events_.push(Event{Event::Type::StoreUp, nullptr, "", -1, Status::Ok, "redis reachable again"});
  }
  return was_down;
}

void StoreLink::lost(const std::string& why) {
  cmd_.reset();
  sub_.reset();
  retryLater();
  bool was_up;
  {
    std::lock_guard<std::mutex> lock(m_);
    was_up = up_;
    up_ = false;
  }
  if (was_up) {
    MW_LOG(LogLevel::Warn, "redis unreachable, worlds keep running: %s", why.c_str());
    events_.push(Event{Event::Type::StoreDown, nullptr, "", -1, Status::Store, why.substr(0, 255)});
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

bool StoreLink::up() const {
  std::lock_guard<std::mutex> lock(m_);
  return up_;
}

}  // namespace mw
