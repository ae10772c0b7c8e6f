// Worlds that shrink and grow in place (mw_world_shrink, mw_world_grow):
// the members the break named leave with no list of the caller's own,
// lists are compared through Redis, survivors keep their order renumbered
// from 0, the world keeps its name and takes the next epoch, the old handle
// is retired, and nobody hangs: an excluded member that calls nothing, a
// member that dies during a shrink or a grow, a newcomer that never comes. Every
// bad input is refused and changes nothing. On UCX a shrink opens no
// connection. Real processes, a real redis-server; run on Gloo and on UCX.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/redis_client.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

constexpr int kCreateMs = 30000;
// Liveness as the library ships it: a member that dies is noticed by its
// transport at once, one that hangs within a second.
const std::vector<std::pair<std::string, std::string>> kSettings = {{"store_timeout_ms", "10000"}};

// An allreduce whose result every member checks: rank r gives
// (r + 1) * (i + 1) at index i, so the sum is size(size + 1)/2 * (i + 1).
// 0, or 1 after saying what went wrong.
int checkedAllreduce(mw_world_t* w, const char* who) {
  const int size = mw_world_size(w), rank = mw_world_rank(w);
  std::vector<int64_t> in(64), out(64, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = (rank + 1) * static_cast<int64_t>(i + 1);
  mw_request_t* req = nullptr;
  MWT_CHECK(mw_allreduce_async(w, in.data(), out.data(), in.size(), MW_INT64, MW_SUM, &req));
  MWT_CHECK(waitAndFree(req));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t want = static_cast<int64_t>(size) * (size + 1) / 2 * static_cast<int64_t>(i + 1);
    if (out[i] != want) {
      std::fprintf(stderr, "%s: rank %d of %d: allreduce[%zu] = %lld, want %lld\n", who, rank, size, i,
                   static_cast<long long>(out[i]), static_cast<long long>(want));
      return 1;
    }
  }
  return 0;
}

// Waits for this context's next MW_EVENT_WORLD_BROKEN; its detail, or ""
// when none came.
std::string nextBreak(mw_context_t* ctx, int timeout_ms, int* peer = nullptr) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    mw_event_t ev;
    if (mw_next_event(ctx, &ev, 100) != MW_OK) continue;
    if (ev.type != MW_EVENT_WORLD_BROKEN) continue;
    if (peer) *peer = ev.peer_rank;
    return ev.detail;
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The world's record in Redis.
std::string metaField(const RedisServer& redis, const std::string& world, const std::string& field) {
  mwlab::RedisClient admin(redis.socketPath());
  return admin.text({"HGET", "mw:world:{" + world + "}", field});
}

// The inodes of this process's TCP sockets (UCX's endpoints; Redis is on a
// unix socket in these tests).
std::set<std::string> tcpSockets() {
  std::set<std::string> tcp;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string f;
      for (int i = 0; i < 10 && fields >> f; ++i) {
      }
      tcp.insert(f);  // the 10th field: the inode
    }
  }
  std::set<std::string> mine;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = d ? readdir(d) : nullptr) {
    char target[256] = {0};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), target, sizeof target - 1) <= 0) continue;
    std::string t(target);
    if (t.rfind("socket:[", 0) != 0) continue;
    std::string inode = t.substr(8, t.size() - 9);
    if (tcp.count(inode)) mine.insert(inode);
  }
  if (d) closedir(d);
  return mine;
}

struct Board {
  std::atomic<int> formed{0};
  std::atomic<int> broke{0};
  std::atomic<int> shrunk{0};
  std::atomic<int> started{0};
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::atomic<uint64_t> epoch{0};

  // This member is done; true once `n` members are (nobody leaves a world
  // another still uses).
  bool finished(int n) {
    done++;
    return eventually([&] { return done.load() == n; }, 30s);
  }
};

// A member of a world of `size` on `url`, for the tests below.
struct Node {
  mw_context_t* ctx = nullptr;
  mw_world_t* world = nullptr;
  ~Node() {
    mw_world_destroy(world);
    mw_context_free(ctx);
  }
  // The successor of a shrink or grow takes the retired world's place
  // (destroyed) once its first allreduce was right; 0, or 1 after saying
  // why.
  int succeed(mw_world_t* next, const char* what) {
    if (checkedAllreduce(next, what) != 0) {
      mw_world_destroy(next);
      return 1;
    }
    MWT_CHECK(mw_world_destroy(world));
    world = next;
    return 0;
  }
  bool join(const std::string& url, const char* name, int rank, int size) {
    ctx = newContext(url, kSettings);
    if (!ctx) return false;
    const mw_status_t s = mw_world_create(ctx, name, rank, size, hostBackend(), 0, kCreateMs, &world);
    if (s != MW_OK) std::fprintf(stderr, "rank %d: create -> %s (%s)\n", rank, mw_status_string(s), mw_last_error());
    return s == MW_OK;
  }
};

}  // namespace

// A member is killed; the survivors shrink with no list: exactly the
// member the break named leaves, the survivors keep their order renumbered
// from 0, the name stays, the epoch is the next, and every result of the
// shrunk world is right. The old handle is retired: its operations fail at
// once naming the successor's epoch, and destroy frees it.
TEST(Resize, ShrinkAfterAKillExcludesWhomTheBreakNamed) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "shrink-kill", rank, 4));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    const uint64_t epoch = mw_world_epoch(n.world);
    board->formed++;
    if (rank == 2) pause();  // until killed
    int blamed = -1;
    const std::string why = nextBreak(n.ctx, 20000, &blamed);
    MWT_REQUIRE(!why.empty() && blamed == 2);
    mw_world_t* next = nullptr;
    // MW_SHRINK_DEFAULT of a world broken by a member the list keeps:
    // refused, and nothing starts.
    const int keeps_the_dead[] = {rank == 0 ? 1 : 0};
    MWT_REQUIRE(expectStatus(mw_world_shrink(n.world, keeps_the_dead, 1, MW_SHRINK_DEFAULT, 5000, &next),
                             MW_ERR_INVALID_ARGUMENT, "DEFAULT shrink keeping the member the break named"));
    MWT_CHECK(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 3);
    MWT_REQUIRE(mw_world_rank(next) == (rank < 2 ? rank : rank - 1));
    MWT_REQUIRE(std::string(mw_world_name(next)) == "shrink-kill");
    MWT_REQUIRE(mw_world_epoch(next) == epoch + 1);
    MWT_REQUIRE(mw_world_state(n.world) == MW_WORLD_RETIRED);
    MWT_REQUIRE(mw_world_state(next) == MW_WORLD_READY);
    for (int i = 0; i < 5; ++i) MWT_REQUIRE(checkedAllreduce(next, "after") == 0);
    // The retired handle: at once, naming the successor's epoch.
    mw_request_t* req = nullptr;
    const mw_status_t s = mw_barrier_async(n.world, &req);
    MWT_REQUIRE(expectStatus(s, MW_ERR_INVALID_ARGUMENT, "barrier on the retired world"));
    MWT_REQUIRE(contains(mw_last_error(), "epoch " + std::to_string(epoch + 1)));
    mw_world_t* again = nullptr;
    MWT_REQUIRE(expectStatus(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, 1000, &again),
                             MW_ERR_INVALID_ARGUMENT, "shrink of the retired world"));
    MWT_CHECK(mw_world_destroy(n.world));
    n.world = next;
    // Nobody leaves before everybody is done with the shrunk world.
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  Workers survivors;
  for (int r : {0, 1, 3}) survivors.add([&, r] { return member(r); });
  const pid_t victim = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 4; }, 60s));
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  EXPECT_TRUE(survivors.join(120s));
  EXPECT_EQ(metaField(redis, "shrink-kill", "how"), "shrunk");
  EXPECT_EQ(metaField(redis, "shrink-kill", "excluded"), "2");
}

// A ready world shrinks around a member that is alive but calls nothing:
// the survivors never wait for it, it hears it was excluded, and its own
// shrink then fails.
TEST(Resize, AnExcludedLiveMemberNeverBlocksTheSurvivorsAndHearsItWasExcluded) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "evict", rank, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    // Nobody shrinks before every member has its result.
    board->formed++;
    MWT_REQUIRE(eventually([&] { return board->formed.load() == 3; }, 30s));
    if (rank == 2) {
      int blamed = -1;
      const std::string why = nextBreak(n.ctx, 30000, &blamed);
      if (!contains(why, "excluded") || blamed != 2) {
        std::fprintf(stderr, "rank 2: break '%s' blaming %d\n", why.c_str(), blamed);
        return 1;
      }
      mw_world_t* next = nullptr;
      MWT_REQUIRE(expectStatus(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, 5000, &next),
                               MW_ERR_WORLD_BROKEN, "shrink of the excluded member"));
      MWT_REQUIRE(contains(mw_last_error(), "excluded"));
      return 0;
    }
    const int exclude[] = {2};
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_shrink(n.world, exclude, 1, MW_SHRINK_DEFAULT, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    MWT_REQUIRE(n.succeed(next, "after") == 0);
    MWT_REQUIRE(board->finished(2));
    return 0;
  };
  EXPECT_TRUE(runRanks(3, member, 120s));
}

// Lists are compared through Redis: a survivor whose list differs from
// the first survivor's gets MW_ERR_INVALID_ARGUMENT naming both, and can
// call again with the agreed one.
TEST(Resize, ADifferingListIsRefusedNamingBothLists) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "differ", rank, 4));
    board->formed++;
    if (rank == 3) {  // excluded; stays until the others are done
      MWT_REQUIRE(eventually([&] { return board->done.load() == 3; }, 60s));
      return 0;
    }
    MWT_REQUIRE(eventually([&] { return board->formed.load() == 4; }, 30s));
    const int agreed[] = {3};
    mw_world_t* next = nullptr;
    if (rank == 1) {
      MWT_REQUIRE(eventually([&] { return board->started.load() == 1; }, 30s));
      const int other[] = {2};
      MWT_REQUIRE(expectStatus(mw_world_shrink(n.world, other, 1, MW_SHRINK_DEFAULT, kCreateMs, &next),
                               MW_ERR_INVALID_ARGUMENT, "shrink with another list"));
      const std::string why = mw_last_error();
      if (!contains(why, "[2]") || !contains(why, "[3]")) {
        std::fprintf(stderr, "rank 1: the message names not both lists: %s\n", why.c_str());
        return 1;
      }
      // The refusal changed nothing. (On Gloo the excluded member, told at
      // once, closes its pairs, which may have broken the world meanwhile.)
      const mw_world_state_t st = mw_world_state(n.world);
      MWT_REQUIRE(next == nullptr &&
                  (st == MW_WORLD_READY || (hostBackend() == MW_BACKEND_GLOO && st == MW_WORLD_BROKEN)));
    }
    if (rank == 0) board->started++;
    MWT_CHECK(mw_world_shrink(n.world, agreed, 1, MW_SHRINK_DEFAULT, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 3);
    MWT_REQUIRE(n.succeed(next, "after") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  EXPECT_TRUE(runRanks(4, member, 120s));
}

// MW_SHRINK_DEFAULT needs nothing pending, and refuses naming the count,
// changing nothing: the pending receive still completes. MW_SHRINK_ABORT
// cancels what is pending first.
TEST(Resize, DefaultNeedsNothingPendingAndAbortCancelsIt) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "pending", rank, 3));
    int64_t value = 0, got = -1;
    if (rank == 0) {
      mw_request_t* recv = nullptr;
      MWT_CHECK(mw_recv_async(n.world, &got, 1, MW_INT64, 1, &recv));
      const int exclude[] = {2};
      mw_world_t* next = nullptr;
      MWT_REQUIRE(expectStatus(mw_world_shrink(n.world, exclude, 1, MW_SHRINK_DEFAULT, 5000, &next),
                               MW_ERR_INVALID_ARGUMENT, "shrink with a receive pending"));
      MWT_REQUIRE(contains(mw_last_error(), "1 operation pending"));
      board->started++;
      MWT_CHECK(waitAndFree(recv));
      MWT_REQUIRE(got == 42);
      // Another receive, which MW_SHRINK_ABORT cancels.
      MWT_CHECK(mw_recv_async(n.world, &got, 1, MW_INT64, 1, &recv));
      MWT_CHECK(mw_world_shrink(n.world, exclude, 1, MW_SHRINK_ABORT, kCreateMs, &next));
      MWT_REQUIRE(expectStatus(waitAndFree(recv), MW_ERR_CANCELLED, "the receive a shrink cancelled"));
      MWT_REQUIRE(n.succeed(next, "after") == 0);
    } else if (rank == 1) {
      MWT_REQUIRE(eventually([&] { return board->started.load() == 1; }, 30s));
      value = 42;
      mw_request_t* send = nullptr;
      MWT_CHECK(mw_send_async(n.world, &value, 1, MW_INT64, 0, &send));
      MWT_CHECK(waitAndFree(send));
      const int exclude[] = {2};
      mw_world_t* next = nullptr;
      MWT_CHECK(mw_world_shrink(n.world, exclude, 1, MW_SHRINK_DEFAULT, kCreateMs, &next));
      MWT_REQUIRE(n.succeed(next, "after") == 0);
    }
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  EXPECT_TRUE(runRanks(3, member, 120s));
}

// Every bad input is MW_ERR_INVALID_ARGUMENT naming the value, and changes
// nothing: the world stays ready at its epoch and runs on.
TEST(Resize, BadInputsAreRefusedNamingTheValueAndChangeNothing) {
  RedisServer redis;
  auto member = [&](int rank) {
    std::vector<std::pair<std::string, std::string>> settings = kSettings;
    settings.emplace_back("max_world_size", "8");
    mw_context_t* ctx = newContext(redis.url(), settings);
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, "bad", rank, 3, hostBackend(), 0, kCreateMs, &w));
    const uint64_t epoch = mw_world_epoch(w);
    mw_world_t* out = nullptr;
    struct Case {
      const char* what;
      std::vector<int> list;
      int n;
      int flags;
      int timeout;
      bool null_list;
      bool null_out;
      const char* named;
    };
    const int self = rank, other = (rank + 1) % 3;
    const std::vector<Case> cases = {
        {"rank out of range", {3}, 1, 0, 1000, false, false, "= 3"},
        {"negative rank", {-1}, 1, 0, 1000, false, false, "= -1"},
        {"rank listed twice", {other, other}, 2, 0, 1000, false, false, "listed twice"},
        {"itself", {self}, 1, 0, 1000, false, false, "own rank"},
        {"n < 0", {}, -1, 0, 1000, true, false, "-1"},
        {"NULL list with n > 0", {}, 2, 0, 1000, true, false, "NULL"},
        {"unknown flags", {other}, 1, 7, 1000, false, false, "flags 7"},
        {"timeout below -1", {other}, 1, 0, -2, false, false, "-2"},
        {"NULL out", {other}, 1, 0, 1000, false, true, "out"},
    };
    for (const Case& c : cases) {
      const mw_status_t s = mw_world_shrink(w, c.null_list ? nullptr : c.list.data(), c.n, c.flags, c.timeout,
                                            c.null_out ? nullptr : &out);
      if (s != MW_ERR_INVALID_ARGUMENT || !contains(mw_last_error(), c.named)) {
        std::fprintf(stderr, "rank %d: shrink, %s: %s (%s)\n", rank, c.what, mw_status_string(s), mw_last_error());
        return 1;
      }
    }
    // A ready world that never broke: no member to exclude by default.
    MWT_REQUIRE(expectStatus(mw_world_shrink(w, nullptr, 0, MW_SHRINK_DEFAULT, 5000, &out), MW_ERR_INVALID_ARGUMENT,
                             "shrink of an unbroken world with no list"));
    for (int size : {3, 2, 9}) {
      const mw_status_t s = mw_world_grow(w, size, 1000, &out);
      if (s != MW_ERR_INVALID_ARGUMENT || !contains(mw_last_error(), std::to_string(size))) {
        std::fprintf(stderr, "rank %d: grow to %d: %s (%s)\n", rank, size, mw_status_string(s), mw_last_error());
        return 1;
      }
    }
    MWT_REQUIRE(expectStatus(mw_world_grow(w, 4, 1000, nullptr), MW_ERR_INVALID_ARGUMENT, "grow, NULL out"));
    MWT_REQUIRE(expectStatus(mw_world_grow(nullptr, 4, 1000, &out), MW_ERR_INVALID_ARGUMENT, "grow, NULL world"));
    MWT_REQUIRE(expectStatus(mw_world_shrink(nullptr, nullptr, 0, 0, 1000, &out), MW_ERR_INVALID_ARGUMENT,
                             "shrink, NULL world"));
    MWT_REQUIRE(out == nullptr);
    MWT_REQUIRE(mw_world_state(w) == MW_WORLD_READY && mw_world_epoch(w) == epoch);
    MWT_REQUIRE(checkedAllreduce(w, "after bad input") == 0);
    mw_request_t* req = nullptr;
    MWT_CHECK(mw_barrier_async(w, &req));
    MWT_CHECK(waitAndFree(req));
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return 0;
  };
  EXPECT_TRUE(runRanks(3, member, 120s));
  EXPECT_EQ(metaField(redis, "bad", "how"), "(nil)");  // no attempt started
}

// Grow: the members call mw_world_grow, a newcomer creates the world with
// the new size and a rank from the old size up, knowing nothing else.
TEST(Resize, ANewcomerJoinsARunningWorld) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "grow", rank, 2));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    board->epoch = mw_world_epoch(n.world);
    board->formed++;
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_grow(n.world, 3, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 3 && mw_world_rank(next) == rank);
    MWT_REQUIRE(mw_world_epoch(next) == board->epoch.load() + 1);
    MWT_REQUIRE(mw_world_state(n.world) == MW_WORLD_RETIRED);
    for (int i = 0; i < 4; ++i) MWT_REQUIRE(checkedAllreduce(next, "after") == 0);
    MWT_REQUIRE(n.succeed(next, "after") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  auto newcomer = [&] {
    MWT_REQUIRE(eventually([&] { return board->formed.load() == 2; }, 60s));
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "grow", 2, 3));
    MWT_REQUIRE(mw_world_epoch(n.world) == board->epoch.load() + 1);
    for (int i = 0; i < 5; ++i) MWT_REQUIRE(checkedAllreduce(n.world, "newcomer") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  Workers w;
  w.add([&] { return member(0); });
  w.add([&] { return member(1); });
  w.add(newcomer);
  EXPECT_TRUE(w.join(120s));
  EXPECT_EQ(metaField(redis, "grow", "how"), "grown");
}

// A newcomer that never comes fails the grow at its timeout with
// MW_ERR_TIMEOUT; the old world is still usable, and grows later.
TEST(Resize, ANewcomerThatNeverComesTimesOutAndTheWorldRunsOn) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "late", rank, 2));
    mw_world_t* next = nullptr;
    const auto start = std::chrono::steady_clock::now();
    MWT_REQUIRE(expectStatus(mw_world_grow(n.world, 3, 1500, &next), MW_ERR_TIMEOUT, "grow without the newcomer"));
    MWT_REQUIRE(msSince(start) < 20000);
    MWT_REQUIRE(next == nullptr && mw_world_state(n.world) == MW_WORLD_READY);
    MWT_REQUIRE(checkedAllreduce(n.world, "after the timeout") == 0);
    board->failed++;
    MWT_CHECK(mw_world_grow(n.world, 3, kCreateMs, &next));
    MWT_REQUIRE(n.succeed(next, "grown") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  auto newcomer = [&] {
    MWT_REQUIRE(eventually([&] { return board->failed.load() == 2; }, 60s));
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "late", 2, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "newcomer") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  Workers w;
  w.add([&] { return member(0); });
  w.add([&] { return member(1); });
  w.add(newcomer);
  EXPECT_TRUE(w.join(120s));
}

// A newcomer that comes before the members grow, and gives up, leaves an
// epoch that never formed: the members' grow takes it over, and a newcomer
// that stays joins.
TEST(Resize, ANewcomerThatGaveUpEarlyLeavesTheWorldResizable) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "early", rank, 2));
    board->formed++;
    MWT_REQUIRE(eventually([&] { return board->failed.load() == 1; }, 60s));
    MWT_REQUIRE(checkedAllreduce(n.world, "after the newcomer gave up") == 0);
    board->started++;
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_grow(n.world, 3, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 3 && mw_world_rank(next) == rank);
    MWT_REQUIRE(n.succeed(next, "grown") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  auto newcomer = [&] {
    MWT_REQUIRE(eventually([&] { return board->formed.load() == 2; }, 60s));
    {
      mw_context_t* ctx = newContext(redis.url(), kSettings);
      MWT_REQUIRE(ctx);
      mw_world_t* w = nullptr;
      MWT_REQUIRE(expectStatus(mw_world_create(ctx, "early", 2, 3, hostBackend(), 0, 1000, &w), MW_ERR_TIMEOUT,
                               "the newcomer that came too early"));
      mw_context_free(ctx);
    }
    board->failed++;
    MWT_REQUIRE(eventually([&] { return board->started.load() == 2; }, 60s));
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "early", 2, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "newcomer") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  Workers w;
  w.add([&] { return member(0); });
  w.add([&] { return member(1); });
  w.add(newcomer);
  EXPECT_TRUE(w.join(120s));
  EXPECT_EQ(metaField(redis, "early", "how"), "grown");
}

// A survivor dies while the others shrink: their shrink fails (the world
// is broken, not a timeout), and a second shrink with no list excludes it
// too.
TEST(Resize, AMemberDyingDuringAShrinkFailsItAndTheNextShrinkExcludesIt) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "second", rank, 4));
    board->formed++;
    if (rank >= 2) pause();  // until killed
    MWT_REQUIRE(!nextBreak(n.ctx, 20000).empty());
    board->broke++;
    mw_world_t* next = nullptr;
    // Rank 2 is killed while this shrink waits for it.
    const mw_status_t s = mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, 60000, &next);
    if (s == MW_OK) {
      std::fprintf(stderr, "rank %d: the first shrink formed without rank 2\n", rank);
      return 1;
    }
    MWT_REQUIRE(expectStatus(s, MW_ERR_WORLD_BROKEN, "the shrink a member died in"));
    MWT_CHECK(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    MWT_REQUIRE(n.succeed(next, "after") == 0);
    MWT_REQUIRE(board->finished(2));
    return 0;
  };
  Workers survivors;
  survivors.add([&] { return member(0); });
  survivors.add([&] { return member(1); });
  const pid_t first = spawn([&] { return member(3); });
  const pid_t second = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 4; }, 60s));
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  ASSERT_TRUE(eventually([&] { return board->broke.load() == 2; }, 30s));
  // The survivors are in their shrink, which waits for rank 2.
  std::this_thread::sleep_for(500ms);
  kill(second, SIGKILL);
  waitpid(second, nullptr, 0);
  EXPECT_TRUE(survivors.join(120s));
}

// A member dies while the others grow: their grow fails (the world is
// broken, not a timeout), a shrink with no list excludes it, and the world
// grows back with a newcomer in its place.
TEST(Resize, AMemberDyingDuringAGrowFailsItAndTheWorldShrinksAndGrowsBack) {
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "grow-dies", rank, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    board->formed++;
    mw_world_t* next = nullptr;
    board->started++;
    // Rank 2 is killed while this grow waits for the newcomer, who comes
    // only later.
    const mw_status_t s = mw_world_grow(n.world, 4, 60000, &next);
    if (s == MW_OK) {
      std::fprintf(stderr, "rank %d: the grow formed without rank 2\n", rank);
      return 1;
    }
    MWT_REQUIRE(expectStatus(s, MW_ERR_WORLD_BROKEN, "the grow a member died in"));
    MWT_REQUIRE(next == nullptr && mw_world_state(n.world) == MW_WORLD_BROKEN);
    MWT_CHECK(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 2 && mw_world_rank(next) == rank);
    MWT_REQUIRE(n.succeed(next, "shrunk") == 0);
    board->shrunk++;
    MWT_CHECK(mw_world_grow(n.world, 3, kCreateMs, &next));
    MWT_REQUIRE(mw_world_size(next) == 3 && mw_world_rank(next) == rank);
    MWT_REQUIRE(n.succeed(next, "grown back") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  auto newcomer = [&] {
    MWT_REQUIRE(eventually([&] { return board->shrunk.load() == 2; }, 60s));
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "grow-dies", 2, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "newcomer") == 0);
    MWT_REQUIRE(board->finished(3));
    return 0;
  };
  Workers w;
  w.add([&] { return member(0); });
  w.add([&] { return member(1); });
  const pid_t victim = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->started.load() == 3; }, 60s));
  // Every member is in its grow, which waits for the newcomer.
  std::this_thread::sleep_for(500ms);
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  w.add(newcomer);
  EXPECT_TRUE(w.join(120s));
  EXPECT_EQ(metaField(redis, "grow-dies", "how"), "grown");
}

// On UCX the survivors keep their endpoints: a shrink after a kill opens
// no connection (no TCP socket of the process is new afterwards).
TEST(Resize, AShrinkOpensNoConnection) {
  if (hostBackend() != MW_BACKEND_UCX) GTEST_SKIP() << "Gloo worlds connect their pairs again";
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "keep", rank, 3));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    board->formed++;
    if (rank == 2) pause();  // until killed
    MWT_REQUIRE(!nextBreak(n.ctx, 20000).empty());
    const std::set<std::string> before = tcpSockets();
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_shrink(n.world, nullptr, 0, MW_SHRINK_ABORT, kCreateMs, &next));
    MWT_REQUIRE(checkedAllreduce(next, "after") == 0);
    const std::set<std::string> after = tcpSockets();
    for (const std::string& inode : after) {
      if (!before.count(inode)) {
        std::fprintf(stderr, "rank %d: the shrink opened TCP socket %s (%zu before, %zu after)\n", rank,
                     inode.c_str(), before.size(), after.size());
        return 1;
      }
    }
    MWT_CHECK(mw_world_destroy(n.world));
    n.world = next;
    MWT_REQUIRE(board->finished(2));
    return 0;
  };
  Workers survivors;
  survivors.add([&] { return member(0); });
  survivors.add([&] { return member(1); });
  const pid_t victim = spawn([&] { return member(2); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 3; }, 60s));
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  EXPECT_TRUE(survivors.join(120s));
}

// On UCX a break keeps the endpoints to the members that live on, for a
// shrink, and tells each of them over its endpoint, as closing it did: the
// other member learns of the break, from whom, while Redis is stopped.
TEST(Resize, ABreakIsToldOverTheEndpointItKeeps) {
  if (hostBackend() != MW_BACKEND_UCX) GTEST_SKIP() << "Gloo closes its pairs on a break";
  RedisServer redis;
  mwlab::Shared<Board> board;
  auto member = [&](int rank) {
    Node n;
    MWT_REQUIRE(n.join(redis.url(), "told", rank, 2));
    MWT_REQUIRE(checkedAllreduce(n.world, "before") == 0);
    board->formed++;
    MWT_REQUIRE(eventually([&] { return board->started.load() == 1; }, 30s));  // Redis is stopped
    if (rank == 0) {
      // A barrier the other member never joins, cancelled once under way:
      // only a break can stop it.
      mw_request_t* req = nullptr;
      MWT_CHECK(mw_barrier_async(n.world, &req));
      std::this_thread::sleep_for(100ms);
      MWT_CHECK(mw_request_cancel(req));
      MWT_REQUIRE(expectStatus(waitAndFree(req), MW_ERR_WORLD_BROKEN, "the cancelled barrier"));
    } else {
      int blamed = -1;
      const std::string why = nextBreak(n.ctx, 10000, &blamed);
      if (!contains(why, "rank 0 reported the world broken") || blamed != 0) {
        std::fprintf(stderr, "rank 1: break '%s' blaming %d\n", why.c_str(), blamed);
        return 1;
      }
    }
    MWT_REQUIRE(board->finished(2));
    return 0;
  };
  Workers members;
  members.add([&] { return member(0); });
  members.add([&] { return member(1); });
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 2; }, 60s));
  redis.pause();
  board->started = 1;
  ASSERT_TRUE(eventually([&] { return board->done.load() == 2; }, 60s));
  redis.resume();
  EXPECT_TRUE(members.join(60s));
}
