// The scrape as an operator runs it: Debian's prometheus server scraping
// `multiworld metrics --listen` while three members of a UCX world move
// data and one is killed with -9. Prometheus' HTTP API then shows the
// break with its cause (the exit, on the survivor that saw it first), the
// detection histogram, and the bytes by path, each series labelled with
// the member it came from.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/prometheus.h"
#include "tests/support/redis_server.h"
#include "tools/lab/ports.h"

extern char** environ;

namespace {

constexpr int kMembers = 3;
constexpr int kVictim = 2;

// Allreduces until the world breaks, then stays (publishing) until killed.
int member(const std::string& url, int rank) {
  mwtest::Member m({{"metrics_publish_ms", "200"}, {"heartbeat_timeout_ms", "30000"}}, 60000);
  MWT_REQUIRE(m.join(url, "scraped", rank, kMembers));
  std::vector<float> x(16384, 1.0f), sum(x.size());
  for (;;) {
    mw_request_t* r = nullptr;
    if (mw_allreduce_async(m.world, x.data(), sum.data(), x.size(), MW_FLOAT32, MW_SUM, &r) != MW_OK) break;
    if (mwtest::waitAndFree(r) != MW_OK) break;
    usleep(1000);
  }
  sleep(120);
  return 0;
}

class Cli {
 public:
  Cli(const std::string& listen, const std::string& url) {
    const std::vector<std::string> args = {MW_CLI_PATH, "metrics", "--listen", listen, "--redis", url};
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Cli() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      mwtest::waitExit(pid_, std::chrono::seconds(10));
    }
  }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

TEST(Prometheus, ScrapesTheBreakItsCauseDetectionAndBytesByPath) {
  if (mwtest::prometheusPath().empty()) GTEST_SKIP() << "prometheus not installed (apt-get install prometheus)";
  if (!mw_backend_available(MW_BACKEND_UCX)) GTEST_SKIP() << "UCX is not usable here";
  setenv("MW_TEST_BACKEND", "ucx", 1);  // the members' worlds (tests/support/member.h)
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  mwtest::Workers workers;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kMembers; ++rank) pids.push_back(workers.add([&, rank] { return member(url, rank); }));

  const std::string listen = "127.0.0.1:" + std::to_string(mwlab::freeLoopbackPort());
  Cli cli(listen, url);
  ASSERT_TRUE(cli.running());
  mwtest::PrometheusServer prometheus(listen, 250);
  ASSERT_TRUE(prometheus.ready(60000));
  // The endpoint answers before Prometheus is asked anything.
  ASSERT_EQ(mwtest::httpGet("127.0.0.1", std::stoi(listen.substr(listen.rfind(':') + 1)), "/metrics").status, 200);

  auto eventually = [&](const std::string& promql, double at_least) {
    std::optional<double> v;
    for (int i = 0; i < 120; ++i) {
      v = prometheus.scalar(promql);
      if (v && *v >= at_least) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ADD_FAILURE() << promql << " stayed " << (v ? std::to_string(*v) : "empty") << "; last answer "
                  << prometheus.query(promql);
    return false;
  };
  // Traffic first: every member's ring bytes reach Prometheus.
  ASSERT_TRUE(eventually(R"(count(sum by (member) (mw_ops_total{backend="ucx",op="allreduce"}) > 0))", kMembers));
  kill(pids[kVictim], SIGKILL);
  // Both survivors count the break once; the one that saw the exit first
  // counts it as that (the other may hear of it from the first: marker).
  EXPECT_TRUE(eventually(R"(sum(mw_world_breaks_total{backend="ucx"}))", kMembers - 1));
  EXPECT_TRUE(eventually(R"(sum(mw_world_breaks_total{backend="ucx",cause="peer_exit"}))", 1));
  EXPECT_TRUE(eventually(R"(count(mw_world_breaks_total{cause="peer_exit",member!="",host!="",pid!=""} > 0))", 1));
  EXPECT_TRUE(eventually(R"(sum(mw_break_detection_seconds_count))", kMembers - 1));
  EXPECT_TRUE(eventually(R"(sum(mw_break_detection_seconds_count{cause="peer_exit"}))", 1));
  EXPECT_TRUE(eventually(R"(histogram_quantile(0.5, sum by (le) (mw_break_detection_seconds_bucket)) >= 0)", 0));
  EXPECT_TRUE(eventually(R"(sum(mw_bytes_sent_total{backend="ucx",path=~"ring|cma|tag"}))", 1));
  EXPECT_TRUE(eventually(R"(count(sum by (path) (mw_bytes_received_total) > 0))", 1));
  EXPECT_TRUE(eventually(R"(sum(mw_worlds{state="broken"}))", kMembers - 1));
}

}  // namespace
