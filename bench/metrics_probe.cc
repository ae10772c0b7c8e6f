// What metrics=on adds to one operation, measured where it is paid: the
// library's own completion hook (WorldMetrics::completed, as
// Request::complete calls it, with its clock read) in a loop, once from one
// thread and once from two threads at the same counters (a waiter and
// mw-ucx completing operations of one world). The figure to hold against an
// operation's time (mw_bench p2p's latency and rate): BENCHMARKS.md,
// "metrics". Run by hand.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/metrics/context_metrics.h"
#include "core/metrics/world_metrics.h"

namespace {

using Clock = std::chrono::steady_clock;

double nsPerCompletion(const mw::metrics::WorldMetrics& m, int n, Clock::time_point issued) {
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) m.completed(mw::OpKind::Send, mw::Status::Ok, Clock::now() - issued, 64);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: metrics_probe [COMPLETIONS per round, > 0]\n");
    return 2;
  }
  mw::metrics::ContextMetrics metrics(false);
  const auto world = metrics.forWorld(mw::Backend::Ucx, "probe");
  // A Send's bytes are the UCX transfer's to count, so give the hook a
  // backend that counts point-to-point bytes itself too: the dearer case.
  const auto gloo = metrics.forWorld(mw::Backend::Gloo, "probe");
  const Clock::time_point issued = Clock::now();
  double clock_ns = 0;
  {
    const auto t0 = Clock::now();
    volatile int64_t sink = 0;
    for (int i = 0; i < n; ++i) sink = sink + (Clock::now() - issued).count();
    clock_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
  }
  std::printf("%-8s %12s %12s %12s\n", "round", "ucx_ns", "gloo_ns", "two_thr_ns");
  for (int round = 1; round <= 3; ++round) {
    const double one = nsPerCompletion(*world, n, issued);
    const double counted = nsPerCompletion(*gloo, n, issued);
    double other = 0;
    std::thread t([&] { other = nsPerCompletion(*world, n / 4, issued); });
    const double mine = nsPerCompletion(*world, n / 4, issued);
    t.join();
    std::printf("%-8d %12.1f %12.1f %12.1f\n", round, one, counted, (mine + other) / 2);
  }
  std::printf("clock: steady_clock::now() alone %.1f ns (of each completion above)\n", clock_ns);
  return 0;
}
