// The metrics through the C API, on real worker processes over a real
// redis-server: what a world's operations and bytes count, the snapshot's
// sized struct and bad input, metrics off, and a member killed with -9:
// its break and cause in the survivor's snapshot, that snapshot on the
// survivor's own HTTP endpoint (metrics_listen) and, published to Redis,
// in `multiworld metrics --once`; promtool checks all three texts.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/prometheus.h"
#include "tests/support/redis_server.h"
#include "tools/lab/ports.h"

namespace {

constexpr int kSends = 20;
constexpr size_t kFloats = 1024;

// One series of a snapshot, found by name and label values.
struct Found {
  bool ok = false;
  mw_metric_info_t info{};
};

Found find(const mw_metrics_t* m, const char* name, const std::vector<std::pair<std::string, std::string>>& labels) {
  for (size_t i = 0; i < mw_metrics_count(m); ++i) {
    Found f;
    f.info.size = sizeof f.info;
    if (mw_metrics_get(m, i, &f.info) != MW_OK || std::strcmp(f.info.name, name) != 0) continue;
    size_t matched = 0;
    for (const auto& [k, v] : labels) {
      for (size_t l = 0; l < f.info.label_count; ++l) {
        if (k == f.info.label_names[l] && v == f.info.label_values[l]) ++matched;
      }
    }
    if (matched == labels.size()) {
      f.ok = true;
      return f;
    }
  }
  return {};
}

std::string text(const mw_metrics_t* m) {
  size_t needed = 0;
  if (mw_metrics_text(m, nullptr, 0, &needed) != MW_OK) return "";
  std::string out(needed, '\0');
  if (mw_metrics_text(m, &out[0], out.size(), &needed) != MW_OK) return "";
  out.resize(needed - 1);
  return out;
}

TEST(Metrics, CountOperationsAndBytesOfAWorld) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  ASSERT_TRUE(mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "counted", rank, 2));
    std::vector<float> buf(kFloats, 1.0f);
    for (int i = 0; i < kSends; ++i) {
      mw_request_t* r = nullptr;
      if (rank == 0) MWT_CHECK(mw_send_async(m.world, buf.data(), kFloats, MW_FLOAT32, 1, &r));
      if (rank == 1) MWT_CHECK(mw_recv_async(m.world, buf.data(), kFloats, MW_FLOAT32, 0, &r));
      MWT_CHECK(mwtest::waitAndFree(r));
    }
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_barrier_async(m.world, &r));
    MWT_CHECK(mwtest::waitAndFree(r));

    mw_metrics_t* snap = nullptr;
    MWT_CHECK(mw_metrics_snapshot(m.ctx, &snap));
    const std::string backend = mwtest::hostBackendName();
    const char* op = rank == 0 ? "send" : "recv";
    Found ops = find(snap, "mw_ops_total", {{"backend", backend}, {"op", op}});
    MWT_REQUIRE(ops.ok && ops.info.kind == MW_METRIC_COUNTER && ops.info.value == kSends);
    MWT_REQUIRE(ops.info.label_count == 2 && std::strcmp(ops.info.label_names[0], "backend") == 0);
    Found secs = find(snap, "mw_op_seconds", {{"backend", backend}, {"op", op}});
    MWT_REQUIRE(secs.ok && secs.info.kind == MW_METRIC_HISTOGRAM && secs.info.count == kSends);
    MWT_REQUIRE(secs.info.value > 0 && secs.info.bucket_count > 0);
    MWT_REQUIRE(secs.info.bucket_counts[secs.info.bucket_count - 1] <= secs.info.count);
    MWT_REQUIRE(find(snap, "mw_ops_total", {{"op", "barrier"}}).ok);
    MWT_REQUIRE(!find(snap, "mw_op_errors_total", {}).ok);
    MWT_REQUIRE(find(snap, "mw_world_formations_total", {}).info.value == 1);
    MWT_REQUIRE(find(snap, "mw_worlds", {{"backend", backend}, {"state", "ready"}}).info.value == 1);
    MWT_REQUIRE(find(snap, "mw_store_up", {}).info.value == 1);
    // Bytes by the path that carried them: Gloo counts its point-to-point
    // payloads; UCX what its transfers moved, here on this host's rings
    // and by cross-memory attach.
    const char* dir = rank == 0 ? "mw_bytes_sent_total" : "mw_bytes_received_total";
    double bytes = 0;
    for (const char* path : {"tcp", "tag", "ring", "cma"}) {
      Found b = find(snap, dir, {{"backend", backend}, {"path", path}});
      if (b.ok) bytes += b.info.value;
    }
    MWT_REQUIRE(bytes >= kSends * kFloats * sizeof(float));
    if (backend == "gloo") MWT_REQUIRE(bytes == kSends * kFloats * sizeof(float));
    const std::string t = text(snap);
    MWT_REQUIRE(t.find("# TYPE mw_op_seconds histogram\n") != std::string::npos);
    MWT_REQUIRE(t.find("mw_ops_total{backend=\"" + backend + "\",op=\"" + op + "\"} " + std::to_string(kSends) + "\n") !=
                std::string::npos);
    mw_metrics_free(snap);
    // Neither leaves (which breaks the world for the other) before both looked.
    MWT_CHECK(mw_barrier_async(m.world, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    return 0;
  }));
}

TEST(Metrics, TheSnapshotRefusesBadInputAndGrowsBySize) {
  mwtest::RedisServer redis;
  mw_context_t* ctx = mwtest::newContext(redis.url());
  ASSERT_NE(ctx, nullptr);
  mw_metrics_t* snap = nullptr;
  EXPECT_EQ(mw_metrics_snapshot(nullptr, &snap), MW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mw_metrics_snapshot(ctx, nullptr), MW_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(mw_metrics_snapshot(ctx, &snap), MW_OK);
  mw_context_free(ctx);  // the snapshot does not need it
  ASSERT_GE(mw_metrics_count(snap), 1u);
  EXPECT_EQ(mw_metrics_count(nullptr), 0u);

  mw_metric_info_t info;
  info.size = sizeof info - 1;
  EXPECT_EQ(mw_metrics_get(snap, 0, &info), MW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mw_last_error()).find("mw_metric_info_t size"), std::string::npos) << mw_last_error();
  info.size = sizeof info;
  const size_t n = mw_metrics_count(snap);
  EXPECT_EQ(mw_metrics_get(snap, n, &info), MW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mw_last_error()).find(std::to_string(n)), std::string::npos) << mw_last_error();
  EXPECT_EQ(mw_metrics_get(nullptr, 0, &info), MW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mw_metrics_get(snap, 0, nullptr), MW_ERR_INVALID_ARGUMENT);

  // A caller built against a later header: zero past what this library knows.
  struct Later {
    mw_metric_info_t info;
    uint64_t more;
  } later;
  std::memset(&later, 0x5a, sizeof later);
  later.info.size = sizeof later;
  ASSERT_EQ(mw_metrics_get(snap, 0, &later.info), MW_OK);
  EXPECT_EQ(later.more, 0u);
  EXPECT_EQ(later.info.size, sizeof later);
  EXPECT_NE(later.info.name, nullptr);

  size_t needed = 0;
  ASSERT_EQ(mw_metrics_text(snap, nullptr, 0, &needed), MW_OK);
  ASSERT_GT(needed, 1u);
  std::string small(needed - 1, 'x');
  EXPECT_EQ(mw_metrics_text(snap, &small[0], small.size(), nullptr), MW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(small, std::string(needed - 1, 'x'));  // nothing written
  EXPECT_EQ(mw_metrics_text(nullptr, nullptr, 0, &needed), MW_ERR_INVALID_ARGUMENT);
  std::string whole(needed, 'x');
  ASSERT_EQ(mw_metrics_text(snap, &whole[0], whole.size(), nullptr), MW_OK);
  EXPECT_EQ(whole.back(), '\0');
  EXPECT_NE(whole.find("mw_store_up 1\n"), std::string::npos) << whole;
  mw_metrics_free(snap);
  mw_metrics_free(nullptr);
}

TEST(Metrics, OffKeepsNothing) {
  mwtest::RedisServer redis;
  mw_context_t* ctx = mwtest::newContext(redis.url(), {{"metrics", "off"}});
  ASSERT_NE(ctx, nullptr);
  mw_metrics_t* snap = nullptr;
  ASSERT_EQ(mw_metrics_snapshot(ctx, &snap), MW_OK);
  EXPECT_EQ(mw_metrics_count(snap), 0u);
  EXPECT_EQ(text(snap), "");
  mw_metrics_free(snap);
  mw_context_free(ctx);
  EXPECT_EQ(mwtest::newContext(redis.url(), {{"metrics", "off"}, {"metrics_listen", "127.0.0.1:0"}}), nullptr);
}

// Rank 1 is killed with -9 once the world formed; rank 0 reads its own
// metrics three ways after the break.
TEST(Metrics, AKilledMemberShowsInEveryExposition) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  const int port = mwlab::freeLoopbackPort();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  mwtest::Workers workers;
  workers.add([&]() -> int {
    mwtest::Member m({{"metrics_listen", listen}, {"metrics_publish_ms", "100"}});
    MWT_REQUIRE(m.join(url, "killed", 0, 2));
    mw_event_t ev;
    MWT_CHECK(mw_next_event(m.ctx, &ev, 30000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    mw_metrics_t* snap = nullptr;
    MWT_CHECK(mw_metrics_snapshot(m.ctx, &snap));
    // On one host UCX sees the process exit (its pidfd); Gloo, the reset.
    const std::string backend = mwtest::hostBackendName();
    const std::string cause = backend == "ucx" ? "peer_exit" : "transport";
    Found breaks = find(snap, "mw_world_breaks_total", {{"backend", backend}, {"cause", cause}});
    if (!breaks.ok || breaks.info.value != 1) std::fprintf(stderr, "%s", text(snap).c_str());
    MWT_REQUIRE(breaks.ok && breaks.info.value == 1);
    Found detection = find(snap, "mw_break_detection_seconds", {{"cause", cause}});
    MWT_REQUIRE(detection.ok && detection.info.count == 1 && detection.info.value < 30);
    MWT_REQUIRE(find(snap, "mw_worlds", {{"backend", backend}, {"state", "broken"}}).info.value == 1);
    const std::string library = text(snap);
    mw_metrics_free(snap);

    const mwtest::HttpReply own = mwtest::httpGet("127.0.0.1", port, "/metrics");
    MWT_REQUIRE(own.status == 200);
    MWT_REQUIRE(own.content_type.find("version=0.0.4") != std::string::npos);
    MWT_REQUIRE(own.body.find("mw_world_breaks_total{backend=\"" + backend + "\",cause=\"" + cause + "\"} 1") !=
                std::string::npos);
    MWT_REQUIRE(mwtest::httpGet("127.0.0.1", port, "/other").status == 404);

    // Published every 100 ms: the break is in Redis soon.
    const std::string cli = std::string(MW_CLI_PATH) + " metrics --once --redis '" + url + "' --namespace mw";
    const std::string line =
        ",pid=\"" + std::to_string(getpid()) + "\",backend=\"" + backend + "\",cause=\"" + cause + "\"} 1\n";
    std::string scraped;
    for (int i = 0; i < 100 && scraped.find(line) == std::string::npos; ++i) {
      usleep(100 * 1000);
      FILE* p = popen(cli.c_str(), "r");
      MWT_REQUIRE(p);
      scraped.clear();
      char chunk[4096];
      for (size_t n; (n = fread(chunk, 1, sizeof chunk, p)) > 0;) scraped.append(chunk, n);
      MWT_REQUIRE(pclose(p) == 0);
    }
    if (scraped.find(line) == std::string::npos) std::fprintf(stderr, "no '%s' in:\n%s", line.c_str(), scraped.c_str());
    MWT_REQUIRE(scraped.find(line) != std::string::npos);
    // The victim's heartbeat (and so its last snapshot) lives on until it expires.
    MWT_REQUIRE(scraped.find("mw_scrape_members{snapshot=\"read\"} ") != std::string::npos);

    if (mwtest::promtoolPath().empty()) {
      std::fprintf(stderr, "promtool not installed (apt-get install prometheus): texts not checked\n");
      return 77;
    }
    for (const std::string* t : std::vector<const std::string*>{&library, &own.body, &scraped}) {
      const std::string problems = mwtest::promtoolProblems(*t);
      if (!problems.empty()) std::fprintf(stderr, "promtool:\n%s\non:\n%s", problems.c_str(), t->c_str());
      MWT_REQUIRE(problems.empty());
    }
    return 0;
  });
  const pid_t victim = workers.add([&]() -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, "killed", 1, 2));
    raise(SIGKILL);
    return 1;
  });
  EXPECT_EQ(mwtest::waitExit(victim, std::chrono::seconds(60)), 128 + SIGKILL);
  const int survivor = mwtest::waitExit(workers.pids()[0], std::chrono::seconds(90));
  if (survivor == 77) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(survivor, 0);
}

}  // namespace
