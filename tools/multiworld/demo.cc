#include "tools/multiworld/demo.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/metrics/endpoint.h"
#include "tools/lab/process_exit.h"
#include "tools/lab/stats.h"
#include "tools/multiworld/demo_protocol.h"
#include "tools/multiworld/embedded_redis.h"
#include "tools/multiworld/message_node.h"
#include "tools/multiworld/metrics.h"

extern char** environ;

namespace mwcli {
namespace {

using Clock = std::chrono::steady_clock;
// The bench's nearest-rank percentile, so the demo's p99 means the same.
using mwlab::percentile;
constexpr int kWindowPerReplica = 4;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

pid_t spawnStage(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<std::string> all = {exe, "__demo-stage"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + exe);
  }
  return pid;
}

// Waits for `pid` to exit until `deadline` (a pidfd, no polling loop),
// then kills it.
void reapOrKill(pid_t pid, Clock::time_point deadline) {
  mwlab::waitForExit(pid, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  if (waitpid(pid, nullptr, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

std::string joinIds(const std::vector<int>& ids) {
  std::string s;
  for (int k : ids) s += (s.empty() ? "" : ",") + std::to_string(k);
  return s;
}

struct Replica {
  pid_t pid = -1;
  bool live = false;
  bool killed = false;
  int ready_acks = 0;
  Clock::time_point spawned;
  long served = 0;
  long served_this_second = 0;
  int inflight = 0;
};

struct InFlight {
  int replica;
  Clock::time_point sent;
};

class Leader {
 public:
  explicit Leader(const DemoOptions& opt) : opt_(opt) {}
  int run();

 private:
  void issue();
  void onMessage(Endpoint& from, const Message& m);
  void replicaDown(int k, const char* how);
  void resend(uint64_t id);
  bool check(const Message& m) const;
  void progress(double t);
  int pickReplica() const;

  const DemoOptions opt_;
  std::unique_ptr<MessageNode> node_;
  Endpoint* to_s1_ = nullptr;
  Endpoint* to_s3_ = nullptr;
  std::map<int, Replica> replicas_;
  std::map<uint64_t, InFlight> inflight_;
  std::deque<uint64_t> retry_;
  std::set<uint64_t> done_;
  uint64_t next_id_ = 0;
  long retried_ = 0, bad_ = 0, duplicates_ = 0;
  double detect_ms_ = -1, rejoin_ms_ = -1;
  Clock::time_point killed_at_;
  std::vector<double> latencies_, second_latencies_;
  bool stopping_ = false;
};

int Leader::pickReplica() const {
  int best = -1;
  for (const auto& [k, r] : replicas_) {
    if (r.live && r.inflight < kWindowPerReplica && (best < 0 || r.inflight < replicas_.at(best).inflight)) best = k;
  }
  return best;
}

void Leader::issue() {
  for (;;) {
    int k = pickReplica();
    if (k < 0) return;
    uint64_t id;
    if (!retry_.empty()) {
      id = retry_.front();
      retry_.pop_front();
      ++retried_;
    } else if (!stopping_) {
      id = next_id_++;
    } else {
      return;
    }
    Message m{};
    m.h.kind = MsgKind::Request;
    m.h.req_id = id;
    m.h.replica = k;
    for (size_t i = 0; i < kTensorFloats; ++i) m.tensor[i] = inputValue(id, i);
    if (!node_->send(*to_s1_, m)) throw std::runtime_error("lost the world to stage 1");
    inflight_[id] = InFlight{k, Clock::now()};
    ++replicas_[k].inflight;
  }
}

void Leader::resend(uint64_t id) {
  auto it = inflight_.find(id);
  if (it == inflight_.end()) return;
  --replicas_[it->second.replica].inflight;
  inflight_.erase(it);
  retry_.push_back(id);
}

void Leader::replicaDown(int k, const char* how) {
  auto it = replicas_.find(k);
  if (it == replicas_.end() || !it->second.live) return;  // stage 1 and stage 3 both report it
  if (it->second.killed && detect_ms_ < 0) detect_ms_ = msBetween(killed_at_, Clock::now());
  it->second.live = false;
  std::printf("demo: replica %d is down (%s); re-sending its %d requests in flight through the others\n", k, how,
              it->second.inflight);
  std::vector<uint64_t> again;
  for (auto& [id, f] : inflight_) {
    if (f.replica == k) again.push_back(id);
  }
  for (uint64_t id : again) resend(id);
}

bool Leader::check(const Message& m) const {
  for (size_t i = 0; i < kTensorFloats; ++i) {
    float want = stage3(stage2(stage1(inputValue(m.h.req_id, i))));
    if (m.tensor[i] != want) return false;
  }
  return true;
}

void Leader::onMessage(Endpoint&, const Message& m) {
  switch (m.h.kind) {
    case MsgKind::Result: {
      auto it = inflight_.find(m.h.req_id);
      if (done_.count(m.h.req_id)) {
        ++duplicates_;  // a result that raced its own re-send
        return;
      }
      if (!check(m)) {
        ++bad_;
        std::fprintf(stderr, "demo: request %llu came back wrong\n", static_cast<unsigned long long>(m.h.req_id));
      }
      done_.insert(m.h.req_id);
      auto& r = replicas_[m.h.replica];
      ++r.served;
      ++r.served_this_second;
      if (it != inflight_.end()) {
        double ms = msBetween(it->second.sent, Clock::now());
        latencies_.push_back(ms);
        second_latencies_.push_back(ms);
        --replicas_[it->second.replica].inflight;
        inflight_.erase(it);
      } else {
        // Came back while queued for a retry: it is done after all.
        retry_.erase(std::remove(retry_.begin(), retry_.end(), m.h.req_id), retry_.end());
      }
      break;
    }
    case MsgKind::Nack:
      resend(m.h.req_id);
      break;
    case MsgKind::ReplicaDown:
      // Once drained, the stages taking their worlds down is the shutdown.
      if (!(stopping_ && inflight_.empty() && retry_.empty())) replicaDown(m.h.replica, "its worlds broke");
      break;
    case MsgKind::ReplicaReady: {
      auto& r = replicas_[m.h.replica];
      if (++r.ready_acks == 2) {
        r.live = true;
        if (rejoin_ms_ < 0 && m.h.replica >= opt_.replicas) {
          rejoin_ms_ = msBetween(r.spawned, Clock::now());
          std::printf("demo: replica %d joined after %.0f ms and takes traffic\n", m.h.replica, rejoin_ms_);
        }
      }
      break;
    }
    default:
      break;
  }
}

void Leader::progress(double t) {
  long total = 0;
  std::string per;
  int up = 2, down = 0;
  for (auto& [k, r] : replicas_) {
    total += r.served_this_second;
    per += " r" + std::to_string(k) + "=" + std::to_string(r.served_this_second);
    r.served_this_second = 0;
    if (r.live) up += 2;
    if (r.killed) down += 2;
  }
  std::printf("t=%4.0fs  req/s=%4ld [%s ]  worlds up=%d broken=%d  p50=%.1fms p99=%.1fms\n", t, total, per.c_str(), up,
              down, percentile(second_latencies_, 50), percentile(second_latencies_, 99));
  std::fflush(stdout);
  second_latencies_.clear();
}

int Leader::run() {
  std::unique_ptr<EmbeddedRedis> redis;
  std::string url = opt_.redis_url;
  if (url.empty() && getenv("MW_REDIS_URL")) url = getenv("MW_REDIS_URL");
  if (url.empty()) {
    redis = std::make_unique<EmbeddedRedis>();
    url = redis->url();
    std::printf("demo: started a private redis-server at %s\n", url.c_str());
  }
  setenv("MW_REDIS_URL", url.c_str(), 1);
  if (!getenv("MW_BIND_ADDRESS")) setenv("MW_BIND_ADDRESS", "127.0.0.1", 1);
  // Every member's metrics on one endpoint, as `multiworld metrics --listen`
  // serves a namespace: the private Redis is out of an operator's reach.
  mw::metrics::Endpoint scrape("127.0.0.1:0", [url] { return scrapeNamespace(url, "mw"); }, "mw-metrics");
  std::printf("demo: metrics of every member at http://127.0.0.1:%d/metrics (Prometheus text; or "
              "multiworld metrics --once --redis %s)\n",
              scrape.port(), url.c_str());

  std::vector<int> first;
  for (int k = 0; k < opt_.replicas; ++k) first.push_back(k);
  std::vector<pid_t> stages;
  auto start = Clock::now();
  stages.push_back(spawnStage(opt_.self_exe, {"--role", "s1", "--replicas", joinIds(first)}));
  stages.push_back(spawnStage(opt_.self_exe, {"--role", "s3", "--replicas", joinIds(first)}));
  for (int k : first) {
    replicas_[k].pid = spawnStage(opt_.self_exe, {"--role", "replica", "--replica", std::to_string(k)});
    replicas_[k].spawned = start;
  }

  mw_context_t* ctx = newDemoContext();
  if (!ctx) throw std::runtime_error(mw_last_error());
  int rc = 1;
  try {
    node_ = std::make_unique<MessageNode>(ctx);
    to_s1_ = &node_->connect(leaderToS1(), 0, true, -1);
    to_s3_ = &node_->connect(s3ToLeader(), 1, true, -1);
    for (int k : first) replicas_[k].live = true;
    std::printf("demo: pipeline up in %.0f ms: leader -> stage1 -> %d replicas -> stage3 -> leader, 256 KiB tensors\n",
                msBetween(start, Clock::now()), opt_.replicas);

    auto t0 = Clock::now();
    bool killed = false, scaled = false;
    double next_report = 1;
    auto onBroken = [&](Endpoint& e, const std::string& why) {
      throw std::runtime_error("the leader lost " + e.name + ": " + why);
    };
    auto deliver = [&](Endpoint& e, const Message& m) { onMessage(e, m); };
    for (;;) {
      double t = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!killed && opt_.kill_after_s >= 0 && t >= opt_.kill_after_s) {
        killed = true;
        auto victim = replicas_.begin();
        killed_at_ = Clock::now();
        victim->second.killed = true;
        kill(victim->second.pid, SIGKILL);
        std::printf("demo: kill -9 replica %d (pid %d)\n", victim->first, victim->second.pid);
      }
      if (!scaled && opt_.scale_out_after_s >= 0 && t >= opt_.scale_out_after_s) {
        scaled = true;
        int k = replicas_.rbegin()->first + 1;
        replicas_[k].spawned = Clock::now();
        replicas_[k].pid = spawnStage(opt_.self_exe, {"--role", "replica", "--replica", std::to_string(k)});
        Message add{};
        add.h.kind = MsgKind::AddReplica;
        add.h.replica = k;
        node_->send(*to_s1_, add);
        node_->send(*to_s3_, add);
        std::printf("demo: scale-out: starting replica %d\n", k);
      }
      if (t >= next_report) {
        progress(next_report);
        next_report += 1;
      }
      if (!stopping_ && t >= opt_.duration_s) {
        stopping_ = true;
        std::printf("demo: stop sending; draining %zu requests in flight\n", inflight_.size() + retry_.size());
      }
      if (stopping_ && (inflight_.empty() && retry_.empty())) break;
      if (stopping_ && t >= opt_.duration_s + 20) break;  // what is left is lost
      issue();
      node_->pump(20, deliver, onBroken);
    }
    Message stop{};
    stop.h.kind = MsgKind::Stop;
    node_->send(*to_s1_, stop);
    node_->send(*to_s3_, stop);
    for (int i = 0; i < 10; ++i) node_->pump(20, deliver, [](Endpoint&, const std::string&) {});
    node_.reset();
    rc = 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    node_.reset();
  }
  mw_context_free(ctx);

  // Stages leave on Stop; whatever is still there after a grace is killed.
  std::vector<pid_t> all = stages;
  for (auto& [k, r] : replicas_) {
    if (!r.killed) all.push_back(r.pid);
  }
  auto grace = Clock::now() + std::chrono::seconds(5);
  for (pid_t p : all) reapOrKill(p, grace);
  for (auto& [k, r] : replicas_) {
    if (r.killed) waitpid(r.pid, nullptr, 0);
  }

  const long sent = static_cast<long>(next_id_), completed = static_cast<long>(done_.size());
  const long lost = sent - completed;
  std::printf("\n%-10s %10s %8s\n", "replica", "served", "state");
  for (auto& [k, r] : replicas_) {
    std::printf("%-10d %10ld %8s\n", k, r.served, r.killed ? "killed" : (r.live ? "live" : "gone"));
  }
  std::printf("%-10s %10ld\n", "total", completed);
  std::printf("latency    p50=%.1fms p99=%.1fms  wrong results=%ld  duplicate results=%ld\n",
              percentile(latencies_, 50), percentile(latencies_, 99), bad_, duplicates_);
  std::printf("demo: sent=%ld completed=%ld lost=%ld retried=%ld detect_ms=%.0f rejoin_ms=%.0f\n", sent, completed,
              lost, retried_, std::max(detect_ms_, -1.0), std::max(rejoin_ms_, -1.0));
  return (rc == 0 && lost == 0 && bad_ == 0) ? 0 : 1;
}

}  // namespace

int runDemo(const DemoOptions& opt) {
  Leader leader(opt);
  return leader.run();
}

}  // namespace mwcli
