// The multiworld command-line tool, run as a user would.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"
#include "tools/lab/temp_dir.h"

using namespace mwtest;
using namespace std::chrono_literals;

namespace {

// Runs a shell command; returns its exit code and fills `out` with stdout+stderr.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const std::string kCli = MW_CLI_PATH;

struct Flags {
  std::atomic<int> formed{0};
  std::atomic<int> shrunk{0};
  std::atomic<int> broken_seen{0};
  std::atomic<int> done{0};
};

}  // namespace

TEST(Cli, HelpAndBadUsage) {
  std::string out;
  EXPECT_EQ(run(kCli + " --help", &out), 0);
  EXPECT_NE(out.find("exit codes"), std::string::npos);
  out.clear();
  EXPECT_EQ(run(kCli + " frobnicate", &out), 2);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos);
  out.clear();
  EXPECT_EQ(run(kCli + " demo --duration soon", &out), 2);
  EXPECT_NE(out.find("'soon'"), std::string::npos);
  out.clear();
  EXPECT_EQ(run(kCli + " status --redis redis://127.0.0.1:1", &out), 2);
  EXPECT_EQ(out.find("terminate"), std::string::npos);  // one clear line, no crash
  out.clear();
  EXPECT_EQ(run(kCli + " bench p2p --backend rdma", &out), 2);
  EXPECT_NE(out.find("bad value 'rdma' for --backend"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(kCli + " metrics", &out), 2);
  EXPECT_NE(out.find("exactly one of --listen ADDR and --once"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(kCli + " metrics --listen 9464", &out), 2);
  EXPECT_NE(out.find("'9464' is not host:port"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(run(kCli + " metrics --once --redis redis://127.0.0.1:1", &out), 1);
  EXPECT_EQ(out.find("terminate"), std::string::npos);  // one clear line, no crash
}

// `multiworld bench p2p --backend ucx`: ours, raw UCX (peer error handling,
// as ours) and raw Gloo side by side, with raw UCX over shared memory (no
// error handling) for reference, every payload checked, the JSON rows
// carrying all four; with UCX_TLS unset the run is named "default".
TEST(Cli, BenchP2pOnUcxComparesRawUcxGlooAndSharedMemory) {
#ifndef MW_CLI_HAVE_BENCH
  GTEST_SKIP() << "mw_bench is not built here (-DMW_BUILD_BENCH=OFF)";
#endif
  mwlab::TempDir dir("mw-cli-bench-");
  const std::string json = dir.path() + "/p2p.json";
  std::string out;
  const std::string args = " bench p2p --backend ucx --iters 20 --rounds 1 --max-bytes 4096 --json " + json;
  const int rc = run("env -u MW_REDIS_URL -u UCX_TLS " + kCli + args, &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("gloo_lat_us"), std::string::npos) << out;
  std::string doc;
  EXPECT_EQ(run("cat " + json, &doc), 0);
  for (const char* key : {"\"bench\": \"p2p (ucx, default)\"", "\"backend\": \"ucx\"", "\"raw_error_mode\": \"peer\"",
                          "\"ours_gbps\"", "\"raw_gbps\"", "\"ratio\"", "\"gloo_gbps\"", "\"shm_gbps\"",
                          "\"ours_lat_us\"", "\"raw_lat_us\"", "\"gloo_lat_us\"", "\"shm_lat_us\""}) {
    EXPECT_NE(doc.find(key), std::string::npos) << key << " missing in " << doc;
  }
  EXPECT_EQ(doc.find("null"), std::string::npos) << "shared memory measured at every size: " << doc;
  EXPECT_EQ(std::count(doc.begin(), doc.end(), '{'), 1 + 4) << doc;  // the document and sizes 64, 256, 1K, 4K
}

TEST(Cli, StatusShowsMembersAndMarksBrokenWorlds) {
  RedisServer redis;
  mwlab::Shared<Flags> flags;
  Workers w;
  // Two processes share worlds "healthy" and "doomed"; a third is in
  // "doomed" only and gets killed, so "doomed" breaks.
  auto member = [&](int rank_in_healthy, int rank_in_doomed) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t *h = nullptr, *d = nullptr;
    if (rank_in_healthy >= 0) MWT_CHECK(mw_world_create(ctx, "healthy", rank_in_healthy, 2, mwtest::hostBackend(), 0, 20000, &h));
    MWT_CHECK(mw_world_create(ctx, "doomed", rank_in_doomed, 3, mwtest::hostBackend(), 0, 20000, &d));
    flags->formed.fetch_add(1);
    while (!flags->done.load()) std::this_thread::sleep_for(20ms);
    mw_context_free(ctx);
    return 0;
  };
  w.add([&] { return member(0, 0); });
  w.add([&] { return member(1, 1); });
  pid_t victim = w.add([&] { return member(-1, 2); });
  auto until = std::chrono::steady_clock::now() + 30s;
  while (flags->formed.load() < 3 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(flags->formed.load(), 3);
  kill(victim, SIGKILL);

  std::string out;
  for (int i = 0; i < 50; ++i) {  // until the break is marked in Redis
    out.clear();
    ASSERT_EQ(run(kCli + " status --redis " + redis.url(), &out), 0) << out;
    if (out.find("BROKEN") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(healthy\s+[0-9]+\s+2\s+ready)"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(doomed\s+[0-9]+\s+3\s+BROKEN)"))) << out;
  EXPECT_NE(out.find("why:"), std::string::npos);
  // Two live members with host and pid; the killed one's heartbeat is gone
  // or going.
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(live members[\s\S]*\s[0-9]+\s+[0-9]+ ms)"))) << out;
  flags->done.store(1);
  EXPECT_TRUE(w.join(30s) || true);  // the victim's exit code is SIGKILL's
}

// A world shrunk after a kill shows its lineage: its epoch, that it was
// shrunk, from which epoch, and whom it excluded.
TEST(Cli, StatusShowsHowAWorldWasShrunk) {
  mwtest::RedisServer redis;
  mwtest::Workers w;
  mwlab::Shared<Flags> flags;
  auto member = [&](int rank) {
    mw_context_t* ctx = newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* world = nullptr;
    MWT_CHECK(mw_world_create(ctx, "elastic", rank, 3, mwtest::hostBackend(), 0, 20000, &world));
    flags->formed.fetch_add(1);
    if (rank == 2) pause();  // until killed
    mw_event_t ev;
    MWT_CHECK(mw_next_event(ctx, &ev, 20000));
    mw_world_t* next = nullptr;
    MWT_CHECK(mw_world_shrink(world, nullptr, 0, MW_SHRINK_ABORT, 20000, &next));
    flags->shrunk.fetch_add(1);
    while (!flags->done.load()) std::this_thread::sleep_for(20ms);
    mw_context_free(ctx);
    return 0;
  };
  w.add([&] { return member(0); });
  w.add([&] { return member(1); });
  pid_t victim = w.add([&] { return member(2); });
  ASSERT_TRUE(mwtest::eventually([&] { return flags->formed.load() == 3; }, 30s));
  kill(victim, SIGKILL);
  ASSERT_TRUE(mwtest::eventually([&] { return flags->shrunk.load() == 2; }, 30s));
  std::string out;
  ASSERT_EQ(run(kCli + " status --redis " + redis.url(), &out), 0) << out;
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(elastic\s+([0-9]+)\s+2\s+ready)"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(lineage: epoch ([0-9]+) shrunk from epoch [0-9]+ of 3 members, excluding rank\(s\) 2)")))
      << out;
  flags->done.store(1);
  EXPECT_TRUE(w.join(30s) || true);  // the victim's exit code is SIGKILL's
}

// The demo in a short mode: kill at 5 s, scale-out at 10 s, 20 s of traffic,
// on its own embedded redis-server.
TEST(Cli, DemoShortRunLosesNothing) {
  std::string out;
  int rc = run("env -u MW_REDIS_URL " + kCli + " demo --duration 20 --kill-after 5 --scale-out-after 10", &out);
  std::fprintf(stderr, "%s", out.c_str());
  EXPECT_EQ(rc, 0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m,
                                std::regex(R"(demo: sent=(\d+) completed=(\d+) lost=(\d+) retried=(\d+) detect_ms=(-?\d+) rejoin_ms=(-?\d+)\s*$)")))
      << "no summary line";
  EXPECT_GT(std::stol(m[1]), 0);
  EXPECT_EQ(m[3], "0") << "lost requests";
  EXPECT_GE(std::stol(m[5]), 0) << "the kill was not detected";
  EXPECT_GE(std::stol(m[6]), 0) << "the new replica never joined";
  // The new replica (id 2) served requests.
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n2\s+[1-9][0-9]*\s+live)"))) << "replica 2 served nothing";
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(demo: metrics of every member at http://127\.0\.0\.1:\d+/metrics)")))
      << "the demo did not say where its metrics are";
}
