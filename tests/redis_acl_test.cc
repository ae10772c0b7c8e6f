// The trust boundary is Redis ACL: one user per namespace, limited to its
// keys and its pub/sub channel (README, "Security"). Under those users the
// rendezvous, heartbeats and break notices work, and the user of namespace
// A can neither read nor break the worlds of namespace B.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/redis_client.h"
#include "tools/lab/shared.h"

using namespace mwtest;
using namespace mwlab;
using namespace std::chrono_literals;

namespace {

// The README's ACL, for namespace `ns`: its keys, its channel, and the
// commands the library sends (directly and from its scripts).
std::vector<std::string> aclFor(const std::string& ns) {
  std::vector<std::string> rule = {"ACL",           "SETUSER",       "mw-" + ns,   "on",      ">secret-" + ns,
                                   "resetkeys",     "~" + ns + ":*", "resetchannels", "&" + ns + ":*", "-@all"};
  for (const char* cmd : {"+eval", "+get", "+set", "+del", "+unlink", "+exists", "+type", "+mget", "+pexpire",
                          "+rpush", "+brpoplpush", "+hget", "+hmget", "+hset", "+hdel", "+hstrlen", "+sadd",
                          "+srandmember", "+publish", "+subscribe"}) {
    rule.push_back(cmd);
  }
  return rule;
}

std::string urlFor(const RedisServer& redis, const std::string& ns) {
  return "unix://mw-" + ns + ":secret-" + ns + "@" + redis.socketPath();
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// How Redis words an ACL refusal: of a command's keys or channels, or of a
// key a script touches.
bool refused(const std::string& reply) {
  return contains(reply, "NOPERM") || contains(reply, "no permissions") || contains(reply, "can't access");
}

// Waits for the break event of `world`; its detail, or "" after `timeout`.
std::string breakDetail(mw_context_t* ctx, mw_world_t* world, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  mw_event_t ev;
  while (std::chrono::steady_clock::now() < end) {
    if (mw_next_event(ctx, &ev, 100) == MW_OK && ev.type == MW_EVENT_WORLD_BROKEN && ev.world == world) {
      return ev.detail;
    }
  }
  return "";
}

int barrier(mw_world_t* w) {
  mw_request_t* req;
  MWT_CHECK(mw_barrier_async(w, &req));
  MWT_CHECK(waitAndFree(req));
  return 0;
}

struct Board {
  std::atomic<int> phase{0};  // 1: attacks done; 2: notice forged; 3: member of b stopped and resumed
  std::atomic<int> formed{0};
  std::atomic<int> checked{0};
  std::atomic<int> forged_seen{0};
  std::atomic<int> heartbeat_break_seen{0};
};

bool waitPhase(Board& b, int phase) {
  return eventually([&] { return b.phase.load() >= phase; }, 60s);
}

}  // namespace

TEST(RedisAcl, NamespaceUsersRunTheirWorldsAndCannotTouchEachOther) {
  RedisServer redis;
  RedisClient admin(redis.socketPath());
  ASSERT_TRUE(admin.ok());
  for (const char* ns : {"a", "b"}) ASSERT_EQ(admin.text(aclFor(ns)), "OK");
  Shared<Board> board;
  Workers workers;

  // Namespace a: one world, healthy throughout.
  for (int rank = 0; rank < 2; ++rank) {
    workers.add([&, rank] {
      mw_context_t* ctx = newContext(urlFor(redis, "a"), {{"namespace", "a"}});
      MWT_REQUIRE(ctx);
      mw_world_t* w = nullptr;
      MWT_CHECK(mw_world_create(ctx, "w", rank, 2, hostBackend(), 0, 20000, &w));
      MWT_REQUIRE(barrier(w) == 0);
      board->formed.fetch_add(1);
      MWT_REQUIRE(waitPhase(*board, 3));
      MWT_REQUIRE(mw_world_state(w) == MW_WORLD_READY);
      MWT_REQUIRE(barrier(w) == 0);
      MWT_CHECK(mw_world_destroy(w));
      mw_context_free(ctx);
      return 0;
    });
  }
  // Namespace b: world "w" (same name as a's) is broken by a notice that a
  // writer of b forges; world "hb" by a member that stops.
  pid_t b_members[2];
  for (int rank = 0; rank < 2; ++rank) {
    b_members[rank] = workers.add([&, rank] {
      mw_context_t* ctx = newContext(urlFor(redis, "b"), {{"namespace", "b"}});
      MWT_REQUIRE(ctx);
      mw_world_t *w = nullptr, *hb = nullptr;
      MWT_CHECK(mw_world_create(ctx, "w", rank, 2, hostBackend(), 0, 20000, &w));
      MWT_CHECK(mw_world_create(ctx, "hb", rank, 2, hostBackend(), 0, 20000, &hb));
      MWT_REQUIRE(barrier(w) == 0 && barrier(hb) == 0);
      board->formed.fetch_add(1);
      MWT_REQUIRE(waitPhase(*board, 1));
      // Nothing namespace a's user tried reached this world.
      MWT_REQUIRE(barrier(w) == 0 && barrier(hb) == 0);
      board->checked.fetch_add(1);
      std::string detail = breakDetail(ctx, w, 10000);
      std::fprintf(stderr, "b rank %d, world w: %s\n", rank, detail.c_str());
      MWT_REQUIRE(contains(detail, "reported the world broken: forged by a writer of namespace b"));
      board->forged_seen.fetch_add(1);
      detail = breakDetail(ctx, hb, 20000);
      std::fprintf(stderr, "b rank %d, world hb: %s\n", rank, detail.c_str());
      if (rank == 0) {
        MWT_REQUIRE(contains(detail, "sent no new heartbeat"));
        board->heartbeat_break_seen.store(1);
      } else {
        MWT_REQUIRE(!detail.empty());  // the stopped member learns it once resumed
      }
      MWT_CHECK(mw_world_destroy(w));
      MWT_CHECK(mw_world_destroy(hb));
      mw_context_free(ctx);
      return 0;
    });
  }
  ASSERT_TRUE(eventually([&] { return board->formed.load() == 4; }, 30s)) << "worlds did not form under ACL users";

  // Namespace a's user against namespace b: every read, write, script,
  // publish and subscribe is refused.
  RedisClient intruder(redis.socketPath(), "mw-a", "secret-a");
  ASSERT_TRUE(intruder.ok());
  auto hb_keys = admin.cmd({"KEYS", "b:hb:*"});
  ASSERT_TRUE(hb_keys && hb_keys->elements == 2);
  const std::string b_heartbeat(hb_keys->element[0]->str, hb_keys->element[0]->len);
  const std::string w_epoch = admin.text({"HGET", "b:world:{w}", "epoch"});
  const std::vector<std::vector<std::string>> attacks = {
      {"GET", b_heartbeat},
      {"HGETALL", "b:world:{w}"},
      {"HMGET", "b:world:{w}", "epoch", "size", "state"},
      {"HGET", "b:world:{w}:" + w_epoch + ":members", "0"},
      {"DEL", b_heartbeat},
      {"HSET", "b:world:{w}", "state", "broken"},
      {"SET", "b:world:{w}:" + w_epoch + ":broken", "-1\n0\nforged by a writer of namespace a"},
      {"PUBLISH", "b:events", "w\n" + w_epoch + "\n-1\n0\nforged by a writer of namespace a"},
      {"EVAL", "return redis.call('GET', KEYS[1])", "1", b_heartbeat},
      {"EVAL", "return redis.call('DEL', '" + b_heartbeat + "')", "1", "a:x"},
      {"SUBSCRIBE", "b:events"},
  };
  for (const auto& attack : attacks) {
    std::string reply = intruder.text(attack);
    EXPECT_TRUE(refused(reply)) << attack[0] << ": " << reply;
  }
  EXPECT_EQ(admin.text({"EXISTS", b_heartbeat}), "1");
  EXPECT_EQ(admin.text({"EXISTS", "b:world:{w}:" + w_epoch + ":broken"}), "0");
  // A context of a's user pointed at namespace b cannot even start.
  EXPECT_TRUE(runRanks(1, [&](int) {
    mw_config_t* cfg;
    MWT_CHECK(mw_config_new(&cfg));
    MWT_CHECK(mw_config_set(cfg, "redis_url", urlFor(redis, "a").c_str()));
    MWT_CHECK(mw_config_set(cfg, "namespace", "b"));
    mw_context_t* ctx = nullptr;
    mw_status_t s = mw_context_new(cfg, &ctx);
    mw_config_free(cfg);
    MWT_REQUIRE(expectStatus(s, MW_ERR_STORE, "context of user mw-a on namespace b"));
    MWT_REQUIRE(refused(mw_last_error()));
    return 0;
  }));
  // Heartbeats keep flowing under the ACL: no world breaks over a few timeouts.
  std::this_thread::sleep_for(2500ms);
  board->phase.store(1);
  ASSERT_TRUE(eventually([&] { return board->checked.load() == 2; }, 30s));

  // Anyone who can write to namespace b can break its worlds: break notices
  // are not authenticated. b's own user forges one, and every member hears it.
  RedisClient writer_b(redis.socketPath(), "mw-b", "secret-b");
  ASSERT_TRUE(writer_b.ok());
  EXPECT_EQ(writer_b.text({"PUBLISH", "b:events", "w\n" + w_epoch + "\n-1\n0\nforged by a writer of namespace b"}), "2");
  ASSERT_TRUE(eventually([&] { return board->forged_seen.load() == 2; }, 15s));
  board->phase.store(2);

  // A member that stops: its peer breaks "hb" by heartbeat, and the marker
  // and notice it writes under b's ACL reach Redis and b's subscribers.
  RedisClient listener_b(redis.socketPath(), "mw-b", "secret-b");
  ASSERT_TRUE(listener_b.ok());
  auto sub = listener_b.cmd({"SUBSCRIBE", "b:events"});
  ASSERT_TRUE(sub && sub->type == REDIS_REPLY_ARRAY);
  const std::string hb_epoch = admin.text({"HGET", "b:world:{hb}", "epoch"});
  kill(b_members[1], SIGSTOP);
  EXPECT_TRUE(eventually([&] { return board->heartbeat_break_seen.load() == 1; }, 15s));
  auto notice = listener_b.nextPushed(5s);
  ASSERT_TRUE(notice && notice->type == REDIS_REPLY_ARRAY && notice->elements == 3);
  EXPECT_EQ(std::string(notice->element[2]->str, notice->element[2]->len).rfind("hb\n" + hb_epoch + "\n1\n0\n", 0), 0u);
  EXPECT_EQ(admin.text({"EXISTS", "b:world:{hb}:" + hb_epoch + ":broken"}), "1");
  kill(b_members[1], SIGCONT);
  board->phase.store(3);
  EXPECT_TRUE(workers.join(60s));
}
