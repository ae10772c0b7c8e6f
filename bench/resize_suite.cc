// mw_bench resize: how long a world takes to shrink after a member is
// killed, and to grow by one, against destroying it and creating it again
// under its name (shrink) or creating a world of the new size (grow), each
// with its first allreduce.
//
// Per case (backend, members, same_host_path) the members are processes of
// this host. Ranks 0..n-2 live through the case; the last slot is played by
// a fresh child of worker n-1 in every trial (a worker holding no context
// may fork): the victim, killed with SIGKILL once every member is past a
// barrier, or the newcomer of a grow. Trials alternate between the two
// ways. Times are rank 0's: shrink from its MW_EVENT_WORLD_BROKEN to its
// first allreduce on the shrunk world completing; grow from the barrier to
// its first allreduce on the grown world completing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/extra_suites.h"
#include "bench/suite_common.h"
#include "tools/lab/shared.h"
#include "tools/lab/stats.h"
#include "tools/lab/temp_dir.h"

namespace mwbench {
namespace {

using namespace common;
using mwlab::percentile;

constexpr int kTimeoutMs = 120000;
constexpr size_t kCount = 1024;  // int64 elements per allreduce

enum Kind : int32_t { kShrink = 0, kGrow = 1 };

struct Case {
  bool ucx = true;
  int members = 4;
  bool same_host = true;  // same_host_path auto (UCX)
};

struct Record {
  int32_t kind = kShrink;
  int32_t resized = 0;  // 1: the resize, 0: the recreate
  double ms = 0;
};

// A barrier of `n` processes in shared memory, reusable.
struct Barrier {
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};
  void wait(int n) {
    const int gen = generation.load();
    if (arrived.fetch_add(1) + 1 == n) {
      arrived.store(0);
      generation.fetch_add(1);
      return;
    }
    while (generation.load() == gen) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
};

struct Board {
  Barrier barrier;
};

struct Setup {
  std::string redis_url, ns;
  Case c;
  size_t trials = 0;
  Board* board = nullptr;
};

mw_context_t* context(const Setup& su) {
  mw_config_t* cfg = nullptr;
  mwCheck(mw_config_new(&cfg), "mw_config_new");
  const std::vector<std::pair<const char*, std::string>> settings = {
      {"redis_url", su.redis_url}, {"namespace", su.ns}, {"bind_address", "127.0.0.1"},
      {"log_level", "error"},      {"same_host_path", su.c.same_host ? "auto" : "off"}};
  for (const auto& [key, value] : settings) {
    if (mw_config_set(cfg, key, value.c_str()) != MW_OK) mwFail(std::string("mw_config_set ") + key);
  }
  mw_context_t* ctx = nullptr;
  const mw_status_t s = mw_context_new(cfg, &ctx);
  mw_config_free(cfg);
  mwCheck(s, "mw_context_new");
  return ctx;
}

mw_backend_t backendOf(const Case& c) { return c.ucx ? MW_BACKEND_UCX : MW_BACKEND_GLOO; }

void allreduce(mw_world_t* w) {
  std::vector<int64_t> in(kCount, mw_world_rank(w) + 1), out(kCount);
  mw_request_t* req = nullptr;
  mwCheck(mw_allreduce_async(w, in.data(), out.data(), kCount, MW_INT64, MW_SUM, &req), "mw_allreduce_async");
  mwWait(req, kTimeoutMs, "allreduce");
  const int64_t n = mw_world_size(w);
  if (out[0] != n * (n + 1) / 2) mwFail("allreduce: a wrong sum");
}

mw_world_t* create(mw_context_t* ctx, const Setup& su, const std::string& name, int rank, int size) {
  mw_world_t* w = nullptr;
  mwCheck(mw_world_create(ctx, name.c_str(), rank, size, backendOf(su.c), 0, kTimeoutMs, &w), "mw_world_create");
  return w;
}

// This context's MW_EVENT_WORLD_BROKEN for `w` (events of worlds destroyed
// before are skipped).
void awaitBreak(mw_context_t* ctx, mw_world_t* w) {
  for (;;) {
    mw_event_t ev;
    mwCheck(mw_next_event(ctx, &ev, kTimeoutMs), "mw_next_event (the break)");
    if (ev.type == MW_EVENT_WORLD_BROKEN && ev.world == w) return;
  }
}

std::string nameOf(const Setup& su, const char* what, size_t trial) {
  return std::string(what) + "-" + std::to_string(su.c.members) + "-" + std::to_string(trial);
}

// The last slot of a trial, in a child of worker n-1: a victim (shrink
// trials) or a newcomer (grow trials).
int lastSlot(const Setup& su, Kind kind, size_t trial) {
  const int n = su.c.members;
  mw_context_t* ctx = context(su);
  const bool resized = trial % 2 == 0;
  if (kind == kShrink) {
    mw_world_t* w = create(ctx, su, nameOf(su, "shrink", trial), n - 1, n);
    allreduce(w);
    su.board->barrier.wait(n);
    raise(SIGKILL);
  }
  su.board->barrier.wait(n);
  mw_world_t* w = create(ctx, su, nameOf(su, resized ? "grow" : "fresh", trial), n - 1, n);
  allreduce(w);
  su.board->barrier.wait(n);
  mw_world_destroy(w);
  mw_context_free(ctx);
  return 0;
}

int lastSlotHost(const Setup& su) {
  for (Kind kind : {kShrink, kGrow}) {
    for (size_t t = 0; t < su.trials; ++t) {
      const pid_t child = fork();
      if (child < 0) mwFail("fork");
      if (child == 0) _exit(lastSlot(su, kind, t));
      int status = 0;
      waitpid(child, &status, 0);
      const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
      if (kind == kShrink ? !killed : !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return 1;
    }
  }
  return 0;
}

int survivor(int rank, const Setup& su, int fd) {
  const int n = su.c.members;
  mw_context_t* ctx = context(su);
  auto record = [&](Kind kind, bool resized, double ms) {
    if (rank != 0) return;
    Record r{kind, resized ? 1 : 0, ms};
    writeRecord(fd, &r, sizeof r);
  };
  for (size_t t = 0; t < su.trials; ++t) {
    const bool resized = t % 2 == 0;
    const std::string name = nameOf(su, "shrink", t);
    mw_world_t* w = create(ctx, su, name, rank, n);
    allreduce(w);
    su.board->barrier.wait(n);
    awaitBreak(ctx, w);
    const double t0 = nowSeconds();
    mw_world_t* next = nullptr;
    if (resized) {
      mwCheck(mw_world_shrink(w, nullptr, 0, MW_SHRINK_ABORT, kTimeoutMs, &next), "mw_world_shrink");
      mw_world_destroy(w);
    } else {
      mw_world_destroy(w);
      next = create(ctx, su, name, rank, n - 1);
    }
    allreduce(next);
    record(kShrink, resized, (nowSeconds() - t0) * 1e3);
    mw_request_t* req = nullptr;
    mwCheck(mw_barrier_async(next, &req), "mw_barrier_async");
    mwWait(req, kTimeoutMs, "barrier");
    mw_world_destroy(next);
  }
  for (size_t t = 0; t < su.trials; ++t) {
    const bool resized = t % 2 == 0;
    mw_world_t* w = nullptr;
    if (resized) {
      w = create(ctx, su, nameOf(su, "grow", t), rank, n - 1);
      allreduce(w);
    }
    su.board->barrier.wait(n);
    const double t0 = nowSeconds();
    mw_world_t* next = nullptr;
    if (resized) {
      mwCheck(mw_world_grow(w, n, kTimeoutMs, &next), "mw_world_grow");
      mw_world_destroy(w);
    } else {
      next = create(ctx, su, nameOf(su, "fresh", t), rank, n);
    }
    allreduce(next);
    record(kGrow, resized, (nowSeconds() - t0) * 1e3);
    su.board->barrier.wait(n);
    mw_world_destroy(next);
  }
  mw_context_free(ctx);
  return 0;
}

struct Row {
  Case c;
  Kind kind;
  std::vector<double> resize, recreate;
  double resizeP50() const { return percentile(resize, 50); }
  double ratio() const {
    const double re = percentile(recreate, 50);
    return re > 0 ? resizeP50() / re : 0;
  }
};

}  // namespace

int runResizeSuite(const BenchOptions& opt) {
  std::vector<Case> cases;
  for (bool ucx : {true, false}) {
    if (opt.backend_given && ucx != opt.ucx) continue;
    if (ucx && !mw_backend_available(MW_BACKEND_UCX)) continue;
    for (int members : ucx ? std::vector<int>{4, 16, 64} : std::vector<int>{4, 16}) {
      if (!opt.members.empty() && std::find(opt.members.begin(), opt.members.end(), members) == opt.members.end()) {
        continue;
      }
      for (bool same_host : ucx ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
        cases.push_back(Case{ucx, members, same_host});
      }
    }
  }
  if (cases.empty()) {
    std::fprintf(stderr, "mw_bench resize: no case to run (--backend and --members leave none)\n");
    return 2;
  }
  // Both ways alternate: each gets half.
  const size_t trials = std::max<size_t>(2, opt.trials);
  const std::string machine = machineName();
  std::vector<Row> rows;
  bool ok = true;
  try {
    mwlab::TempDir dir("mw-bench-");
    SuiteRedis redis(opt.redis_url, dir.path());
    mwlab::Shared<Board> board;
    std::printf("# resize on %s: %s\n", machine.c_str(), opt.command.c_str());
    std::printf("# %zu trials per way; shrink: rank 0's ms from its MW_EVENT_WORLD_BROKEN (a member killed) to "
                "its first allreduce (%zu int64) on the shrunk world, against destroy + create under the same "
                "name + that allreduce; grow: from a barrier to the first allreduce of the world grown by one, "
                "against creating a world of that size; ratio = resize_ms_p50 / recreate_ms_p50\n",
                trials, kCount);
    std::printf("%-5s %-9s %7s %-6s %13s %13s %15s %7s\n", "back", "same_host", "members", "kind", "resize_p50_ms",
                "resize_p99_ms", "recreate_p50_ms", "ratio");
    std::fflush(stdout);
    for (const Case& c : cases) {
      Setup su;
      su.redis_url = redis.url();
      su.ns = "mwbench.resize." + std::to_string(getpid()) + "." + std::to_string(rows.size());
      su.c = c;
      su.trials = trials;
      su.board = board.get();
      Row shrink{c, kShrink, {}, {}}, grow{c, kGrow, {}, {}};
      const bool good = runWorkers(
          "resize", c.members, sizeof(Record),
          [&](int rank, int fd) { return rank == c.members - 1 ? lastSlotHost(su) : survivor(rank, su, fd); },
          [&](const char* rec) {
            Record r;
            std::memcpy(&r, rec, sizeof r);
            Row& row = r.kind == kShrink ? shrink : grow;
            (r.resized ? row.resize : row.recreate).push_back(r.ms);
          });
      if (!good) {
        ok = false;
        break;
      }
      for (Row* row : {&shrink, &grow}) {
        std::printf("%-5s %-9s %7d %-6s %13.2f %13.2f %15.2f %7.3f\n", c.ucx ? "ucx" : "gloo",
                    c.ucx ? (c.same_host ? "auto" : "off") : "-", c.members, row->kind == kShrink ? "shrink" : "grow",
                    row->resizeP50(), percentile(row->resize, 99), percentile(row->recreate, 50), row->ratio());
        rows.push_back(*row);
      }
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mw_bench resize: %s\n", e.what());
    return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "mw_bench resize: FAILED\n");
    return 1;
  }
  if (!opt.json_path.empty()) {
    std::vector<JsonRow> jr;
    for (const Row& r : rows) {
      jr.push_back({{"backend", jsonString(r.c.ucx ? "ucx" : "gloo")},
                    {"same_host_path", jsonString(r.c.ucx ? (r.c.same_host ? "auto" : "off") : "off")},
                    {"members", jnum(r.c.members)},
                    {"kind", jsonString(r.kind == kShrink ? "shrink" : "grow")},
                    {"resize_ms_p50", jnum(r.resizeP50())},
                    {"resize_ms_p99", jnum(percentile(r.resize, 99))},
                    {"recreate_ms_p50", jnum(percentile(r.recreate, 50))},
                    {"ratio", jnum(r.ratio())}});
    }
    if (!writeJson(opt.json_path, "resize", opt.command, machine, jr, {{"trials", jnum(static_cast<double>(trials))}})) {
      return 1;
    }
  }
  return 0;
}

}  // namespace mwbench
