#include "core/liveness/watchdog.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/liveness/heartbeat_round.h"
#include "core/resize/resize_plan.h"
#include "core/signals.h"
#include "core/store/redis_values.h"
#include "core/world.h"

namespace mw {
namespace {

constexpr int kRefreshEveryTicks = 10;

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

long long unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::chrono::milliseconds worldKeyTtl(const Config& cfg) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(60), cfg.heartbeat_timeout * 10);
}

}  // namespace

Watchdog::Watchdog(const Config& cfg, RedisConnector& connector, const Keys& keys, std::string member_id,
                   EventQueue& events, metrics::ContextMetrics* metrics)
    : cfg_(cfg),
      keys_(keys),
      member_(std::move(member_id)),
      host_(hostName()),
      link_(cfg_, connector, keys_, events),
      liveness_(cfg.heartbeat_timeout, cfg.heartbeat_interval),
      metrics_(metrics) {
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
  // Named here, not by the thread itself, so that it carries its name
  // once the constructor returned.
  pthread_setname_np(thread_.native_handle(), "mw-watchdog");
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
  if (link_.connected()) {
    try {
      notices_.deliver(link_.commands(), keys_, worldKeyTtl(cfg_));
      link_.commands().command({"DEL", keys_.heartbeat(member_), keys_.metrics(member_)});
    } catch (...) {
    }
  }
  ::close(wake_fd_);
}

void Watchdog::watch(const std::shared_ptr<World>& w) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(m_);
  worlds_[w.get()] = Watched{w, w->name(), w->epoch(), w->rank(), w->members(), std::nullopt};
  for (const auto& m : w->members()) formed_.emplace_back(m, now);
}

void Watchdog::unwatch(const World* w) {
  std::lock_guard<std::mutex> lock(m_);
  worlds_.erase(w);
}

void Watchdog::announce(const World& w, int peer_rank, const std::string& detail) {
  {
    std::lock_guard<std::mutex> lock(m_);
    auto it = worlds_.find(&w);
    if (it != worlds_.end() && !it->second.broken) it->second.broken = BreakMarker{peer_rank, w.rank(), detail};
  }
  notices_.push(Notice{w.name(), w.epoch(), w.rank(), peer_rank, detail});
  wakeUp();
}

void Watchdog::giveUp(const std::string& world, uint64_t epoch, int rank, int size, const std::string& why) {
  Notice n{world, epoch, rank, rank, "rank " + std::to_string(rank) + " gave up joining: " + why};
  n.gave_up = true;
  n.size = size;
  notices_.push(std::move(n));
  wakeUp();
}

void Watchdog::watchForming(const std::string& world, uint64_t epoch, int rank, std::vector<std::string> members,
                            uint64_t from_epoch, std::vector<int> old_rank_of) {
  std::lock_guard<std::mutex> lock(m_);
  for (auto& f : forming_) {
    if (f.world == world && f.epoch == epoch) {
      f.members = std::move(members);
      f.old_rank_of = std::move(old_rank_of);
      return;
    }
  }
  forming_.push_back(Forming{world, epoch, rank, std::move(members), from_epoch, std::move(old_rank_of), false});
}

void Watchdog::unwatchForming(const std::string& world, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(m_);
  forming_.erase(std::remove_if(forming_.begin(), forming_.end(),
                                [&](const Forming& f) { return f.world == world && f.epoch == epoch; }),
                 forming_.end());
}

void Watchdog::formingMemberLost(const std::string& world, uint64_t epoch, int rank, int size, int lost_rank,
                                 uint64_t from_epoch, int lost_old_rank, const std::string& why) {
  Notice n{world, epoch, rank, lost_rank, "rank " + std::to_string(lost_rank) + " is gone: " + why};
  n.gave_up = true;
  n.size = size;
  n.blame_epoch = from_epoch;
  n.blame_rank = lost_old_rank;
  notices_.push(std::move(n));
  wakeUp();
}

void Watchdog::handleExclusion(const ExclusionNotice& n) {
  std::vector<std::pair<std::shared_ptr<World>, int>> hit;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& [ptr, w] : worlds_) {
      if (w.name != n.world || w.epoch != n.old_epoch || w.settled) continue;
      auto ranks = decodeRanks(n.ranks, static_cast<int>(w.members.size()));
      if (!ranks || std::find(ranks->begin(), ranks->end(), w.rank) == ranks->end()) continue;
      w.settled = true;
      if (auto sp = w.world.lock()) hit.emplace_back(std::move(sp), w.rank);
    }
  }
  for (auto& [w, rank] : hit) {
    // The survivors formed, or form, the next epoch without it: nothing to
    // tell them.
    w->breakWorld(rank, "rank " + std::to_string(rank) + " was excluded by the shrink of world '" + n.world +
                            "' epoch " + std::to_string(n.old_epoch) + " to epoch " + std::to_string(n.new_epoch) +
                            " (excluded: [" + n.ranks + "])",
                  false, BreakCause::Marker);
  }
}

void Watchdog::announceAgain() {
  std::lock_guard<std::mutex> lock(m_);
  for (const auto& [ptr, w] : worlds_) {
    if (w.broken) notices_.push(Notice{w.name, w.epoch, w.broken->detector, w.broken->peer, w.broken->detail});
  }
}

void Watchdog::recordLeft(const World& w) {
  notices_.push(Notice{w.name(), w.epoch(), w.rank(), w.rank(), "", true});
  wakeUp();
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
  StoreLink::Connected how = link_.connect([this](RedisConnection& cmd) {
    auto hb = cmd.command({"SET", keys_.heartbeat(member_), heartbeatValue(), "PX",
                           std::to_string(cfg_.heartbeat_timeout.count())});
    if (replyIsError(hb.get())) throw Error(Status::Store, "heartbeat failed: " + cappedText(replyString(hb.get())));
  });
  // After an outage (Redis may have restarted empty) peers need time to
  // write their heartbeats again; they come back up to one pause after
  // us, and write within one interval of that.
  const auto now = Clock::now();
  judge_after_ = now + StoreLink::maxPause(cfg_) + 2 * cfg_.heartbeat_interval;
  // A new master: peers find it through the sentinels, each in its own
  // time; none is judged on what the old master last showed.
  if (how.master_changed) {
    liveness_.restart(now);
    if (metrics_) metrics_->storeFailover();
  }
  // Markers written to a master that has since gone may be lost.
  if (how.ended_outage) announceAgain();
}

void Watchdog::run() {
  Clock::time_point next_tick = Clock::now() + cfg_.heartbeat_interval;
  for (;;) {
    auto now = Clock::now();
    Clock::time_point wake_at = next_tick;
    // A verdict due before the next tick gets a read of its own then:
    // judged only on ticks, a peer stopped just after a tick would be
    // known up to one interval past its timeout, plus the ticks' lateness.
    const auto due = liveness_.dueAt();
    const bool read_due = due && *due > last_tick_ && *due >= judge_after_;
    if (read_due) wake_at = std::min(wake_at, *due);
    if (!link_.connected()) wake_at = std::min(wake_at, link_.nextAttempt());
    int timeout_ms = static_cast<int>(
        std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count() + 1));

    pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {link_.subscriberFd(), POLLIN, 0}, {link_.sentinelFd(), POLLIN, 0}};
    int n = ::poll(fds, 3, timeout_ms);
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
      if (n > 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
        const std::string moved = link_.masterMoved();
        if (!moved.empty() && link_.connected()) link_.lost(moved, true);
      }
      if (!link_.connected() && Clock::now() >= link_.nextAttempt()) connect();
      if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        for (const auto& payload : link_.messages()) handleNotice(payload);
      }
      if (link_.connected()) notices_.deliver(link_.commands(), keys_, worldKeyTtl(cfg_));
      const auto now_after = Clock::now();
      if (now_after >= next_tick) {
        if (link_.connected()) tick();
        link_.keepWatching();
        last_tick_ = Clock::now();
        next_tick = std::max(next_tick + cfg_.heartbeat_interval, Clock::now());
      } else if (read_due && now_after >= *due && link_.connected()) {
        tick();
        last_tick_ = Clock::now();
      }
    } catch (const Error& e) {
      if (link_.connected()) link_.lost(e.what());
      else link_.retryLater();
    }
  }
}

void Watchdog::handleNotice(const std::string& payload) {
  if (auto excluded = parseExclusionNotice(payload)) return handleExclusion(*excluded);
  auto notice = parseBreakNotice(payload);
  if (!notice) return;  // not ours to understand; nothing from Redis may hurt us
  breakWorlds(notice->world, notice->epoch, notice->marker,
              "rank " + std::to_string(notice->marker.detector) + " reported the world broken: " + notice->marker.detail,
              false, BreakCause::Marker, Clock::now());
}

void Watchdog::breakWorlds(const std::string& name, uint64_t epoch, const BreakMarker& marker,
                           const std::string& detail, bool announce, BreakCause cause, Clock::time_point evidence) {
  std::vector<std::shared_ptr<World>> hit;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& [ptr, w] : worlds_) {
      if (w.name == name && w.epoch == epoch && !w.settled) {
        w.settled = true;
        // A break heard of from others is theirs to announce now, and ours
        // to announce again after a failover.
        if (!announce && !w.broken) w.broken = marker;
        if (auto sp = w.world.lock()) hit.push_back(std::move(sp));
      }
    }
  }
  for (auto& w : hit) {
    int blamed = (marker.peer >= 0 && marker.peer < w->size()) ? marker.peer : -1;
    w->breakWorld(blamed, detail, announce, cause, evidence);
  }
}

void Watchdog::setPathsReport(std::function<std::string()> report) {
  std::lock_guard<std::mutex> lock(m_);
  paths_report_ = std::move(report);
}

void Watchdog::setMetricsReport(std::function<std::string(bool store_up)> report) {
  std::lock_guard<std::mutex> lock(m_);
  metrics_report_ = std::move(report);
}

void Watchdog::addReports(HeartbeatRound& round, bool refresh) {
  std::function<std::string()> paths_report;
  std::function<std::string(bool)> metrics_report;
  {
    std::lock_guard<std::mutex> lock(m_);
    paths_report = paths_report_;
    metrics_report = metrics_report_;
  }
  if (paths_report) {
    std::string paths = paths_report();
    if (!paths.empty() && (paths != paths_written_ || refresh)) {
      round.writes.push_back({keys_.paths(member_), paths, worldKeyTtl(cfg_)});
      paths_written_ = std::move(paths);
    }
  }
  const auto now = Clock::now();
  if (metrics_report && cfg_.metrics_publish.count() > 0 && now >= next_publish_) {
    next_publish_ = now + cfg_.metrics_publish;
    // Kept past the next publish; a member that exits cleanly deletes it,
    // and `multiworld metrics` serves only members with a live heartbeat.
    round.writes.push_back({keys_.metrics(member_), metrics_report(link_.up()), 3 * cfg_.metrics_publish});
  }
}

void Watchdog::tick() {
  std::vector<Watched> worlds, unsettled;
  std::vector<Forming> forming;
  std::vector<std::pair<std::string, Clock::time_point>> formed;
  {
    std::lock_guard<std::mutex> lock(m_);
    for (auto& [ptr, w] : worlds_) {
      worlds.push_back(w);
      if (!w.settled) unsettled.push_back(w);
    }
    for (const auto& f : forming_) {
      if (!f.settled) forming.push_back(f);
    }
    formed.swap(formed_);
  }
  // A member that just formed a world with this one committed to it in
  // Redis: whatever its heartbeat showed before (it was stopped, its old
  // worlds broke), it is judged from then on; else a world re-formed with a
  // member back from a stop would break at the first tick on stale beats.
  for (const auto& [member, at] : formed) liveness_.seen(member, at);
  std::set<std::string> peers;
  for (const auto& w : unsettled) {
    for (size_t r = 0; r < w.members.size(); ++r) {
      if (static_cast<int>(r) != w.rank && w.members[r] != member_) peers.insert(w.members[r]);
    }
  }
  for (const auto& f : forming) {
    for (size_t r = 0; r < f.members.size(); ++r) {
      // "": a grow's newcomer, not known until every member claimed.
      if (static_cast<int>(r) != f.rank && !f.members[r].empty() && f.members[r] != member_) {
        peers.insert(f.members[r]);
      }
    }
  }

  HeartbeatRound round;
  round.heartbeat_key = keys_.heartbeat(member_);
  round.heartbeat_value = heartbeatValue();
  round.heartbeat_ttl = cfg_.heartbeat_timeout;
  for (const auto& m : peers) round.peer_keys.push_back(keys_.heartbeat(m));
  for (const auto& w : unsettled) round.marker_keys.push_back(keys_.worldEpoch(w.name, w.epoch, "broken"));
  if (++ticks_ % kRefreshEveryTicks == 0) {
    round.refresh_ttl = worldKeyTtl(cfg_);
    for (const auto& w : worlds) {
      round.refresh_keys.push_back(keys_.worldMeta(w.name));
      round.refresh_keys.push_back(keys_.worldEpoch(w.name, w.epoch, "members"));
    }
  }
  addReports(round, !round.refresh_keys.empty());
  const auto sent = Clock::now();
  HeartbeatReads reads = runHeartbeatRound(link_.commands(), round);
  if (metrics_) metrics_->storeRoundTrip(Clock::now() - sent);

  auto now = Clock::now();
  // If this thread itself was held up (CPU starvation, SIGSTOP, a Redis
  // that stalled for everyone), missing heartbeats say nothing about the
  // peers yet: give them a moment to write again.
  if (now - last_tick_ > cfg_.heartbeat_timeout / 2) {
    judge_after_ = std::max(judge_after_, now + 2 * cfg_.heartbeat_interval);
  }
  judgeMarkers(unsettled, reads.markers);
  judgeBeats(unsettled, forming, peers, reads.beats, now);
}

void Watchdog::judgeMarkers(const std::vector<Watched>& worlds,
                            const std::vector<std::optional<std::string>>& markers) {
  for (size_t i = 0; i < worlds.size() && i < markers.size(); ++i) {
    if (!markers[i]) continue;
    // Any value under the key is a break, even one we cannot read.
    auto marker = parseBreakMarker(*markers[i]);
    std::string detail = marker ? "rank " + std::to_string(marker->detector) +
                                      " reported the world broken: " + marker->detail
                                : "its break marker in Redis reads '" + cappedText(*markers[i]) + "'";
    breakWorlds(worlds[i].name, worlds[i].epoch, marker ? *marker : BreakMarker{-1, worlds[i].rank, detail}, detail,
                false, BreakCause::Marker, Clock::now());
  }
}

void Watchdog::judgeBeats(const std::vector<Watched>& worlds, const std::vector<Forming>& forming,
                          const std::set<std::string>& peers, const std::vector<std::optional<std::string>>& beats,
                          Clock::time_point now) {
  std::map<std::string, std::optional<std::string_view>> dead;
  size_t i = 0;
  for (auto it = peers.begin(); it != peers.end() && i < beats.size(); ++it, ++i) {
    std::optional<std::string_view> value;
    if (beats[i]) value = *beats[i];
    if (liveness_.overdue(*it, value, now) && now >= judge_after_) dead[*it] = value;
  }
  liveness_.retain(peers);
  for (const auto& w : worlds) {
    for (size_t r = 0; r < w.members.size(); ++r) {
      auto found = dead.find(w.members[r]);
      if (static_cast<int>(r) == w.rank || found == dead.end()) continue;
      breakWorlds(w.name, w.epoch, BreakMarker{static_cast<int>(r), w.rank, ""},
                  liveness_.describe(static_cast<int>(r), found->first, found->second, now), true,
                  BreakCause::Heartbeat, liveness_.lastNews(found->first).value_or(now));
      break;
    }
  }
  for (const auto& f : forming) {
    for (size_t r = 0; r < f.members.size(); ++r) {
      auto found = dead.find(f.members[r]);
      if (static_cast<int>(r) == f.rank || found == dead.end()) continue;
      {
        std::lock_guard<std::mutex> lock(m_);
        for (auto& mine : forming_) {
          if (mine.world == f.world && mine.epoch == f.epoch) mine.settled = true;
        }
      }
      const int old_rank = r < f.old_rank_of.size() ? f.old_rank_of[r] : -1;
      formingMemberLost(f.world, f.epoch, f.rank, static_cast<int>(f.members.size()), static_cast<int>(r),
                        f.from_epoch, old_rank,
                        liveness_.describe(static_cast<int>(r), found->first, found->second, now));
      break;
    }
  }
}

}  // namespace mw
