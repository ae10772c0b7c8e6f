// The benchmarks' command line, shared by mw_bench and `multiworld bench`:
// benchmarks of multiworld against the transport underneath.
//
//   (p2p, poll, fanin and allreduce also take [--spin-us N])
//   mw_bench p2p [--backend ucx|gloo] [--json FILE] [--iters N] [--rounds R] [--min-bytes B]
//                [--max-bytes B] [--redis URL]
//   mw_bench faults [--backend ucx|gloo] [--trials N] [--healthy-bytes B] [--json FILE] [--redis URL]
//   mw_bench falsebreaks [--backend ucx|gloo] [--trials N] [--json FILE]
//   (faults and falsebreaks also take [--heartbeat-interval-ms N] [--heartbeat-timeout-ms N])
//   mw_bench allreduce [--backend ucx|gloo] [--json FILE] [--iters N] [--rounds R] [--min-bytes B]
//                      [--max-bytes B] [--redis URL]
//   mw_bench create [--backend ucx|gloo] [--trials N] [--json FILE]
//   mw_bench resize [--backend ucx|gloo] [--trials N] [--members LIST] [--json FILE] [--redis URL]
//   mw_bench control [--backend ucx|gloo] [--seconds S] [--json FILE]
//   mw_bench poll [--backend ucx|gloo] [--iters N] [--json FILE] [--redis URL]
//   mw_bench fanin [--backend ucx|gloo] [--iters N] [--max-senders K] [--json FILE] [--redis URL]
//   mw_bench failover [--trials N] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B] [--parts LIST]
//                     [--json FILE]
//   mw_bench soak [--backend ucx|gloo] [--minutes M] [--seed S] [--processes N] [--rails 1|2]
//                 [--faults LIST] [--json FILE] [--heartbeat-interval-ms N] [--heartbeat-timeout-ms N]
//   mw_bench nccl [--json FILE] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B]
//                 [--device N] [--redis URL]     (built only with CUDA and NCCL)
//
// Byte counts take an optional K, M or G suffix (powers of 1024).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/extra_suites.h"
#include "bench/falsebreaks_suite.h"
#include "bench/faults_suite.h"
#include "bench/p2p_suite.h"
#include "bench/soak/soak_schedule.h"
#include "bench/soak/soak_suite.h"

extern char** environ;

namespace {

const char kUsage[] =
    "Every suite but nccl takes --backend ucx|gloo: the host backend of multiworld's worlds (default ucx).\n"
    "The usual UCX_* variables apply to ours and to the raw UCX baseline alike. Both use peer error handling,\n"
    "for which UCX 1.13 selects no shared memory: on one host they run over tcp on loopback whatever UCX_TLS,\n"
    "except that ours sends to members of its host through per-pair rings and lends them messages of 64 KiB\n"
    "and more (the same-host path; MW_SAME_HOST_PATH=off and MW_SAME_HOST_MIN_BYTES as for the library).\n"
    "p2p, poll, fanin and allreduce take --spin-us N: ours' spin_us (how long mw_wait/mw_poll drive progress\n"
    "before sleeping; default: the library's).\n"
    "p2p and allreduce take --metrics on|off|compare: ours with its metrics on (default) or off; compare runs\n"
    "ours with metrics on against ours with metrics off (raw_* and ratio in the output) instead of the raw\n"
    "baselines, alternating as usual: what counting costs.\n"
    "usage: mw_bench p2p [--backend B] [--json FILE] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B]\n"
    "                    [--redis URL]\n"
    "  ucx: ours against a raw ucp tag loop on the same transports, and raw Gloo; unless UCX_TLS excludes\n"
    "  shared memory, also raw UCX without error handling over shared memory (shm_*: what peer mode gives up);\n"
    "  named by UCX_TLS: p2p (ucx, default), p2p (ucx, tcp). gloo: ours against raw Gloo\n"
    "  --json FILE     also write the results as JSON\n"
    "  --iters N       iterations per round and size (default: calibrated to ~0.1 s per round)\n"
    "  --rounds R      rounds per size, each starting with the next implementation, median reported (default 5)\n"
    "  --min-bytes B   smallest message (default 64); sizes grow by 4x\n"
    "  --max-bytes B   largest message (default 64M)\n"
    "  --redis URL     Redis for multiworld (default: MW_REDIS_URL, else a private redis-server)\n"
    "faults and falsebreaks take --heartbeat-interval-ms N and --heartbeat-timeout-ms N: the heartbeat\n"
    "settings of every context of the run (default: the library's, 100 and 1000).\n"
    "usage: mw_bench faults [--backend B] [--trials N] [--healthy-bytes B] [--json FILE] [--redis URL]\n"
    "  --trials N      trials per fault kind (kill9, sigstop, partition) for detection latency (default 20)\n"
    "  --healthy-bytes B  message size of the healthy-world part, a multiple of 4 (default 64K)\n"
    "  --json FILE     also write the results as JSON\n"
    "  --redis URL     Redis for multiworld (default: a private redis-server; MW_REDIS_URL is not used);\n"
    "                  with --redis the partition kind is skipped, as it needs the private one\n"
    "usage: mw_bench falsebreaks [--backend B] [--trials N] [--json FILE]\n"
    "  healthy worlds under load: 4 processes, a 2-rank world per pair, all streaming checked messages,\n"
    "  then (cpu) one busy-loop process per CPU for 10 s, or (redis_pause) the private redis-server\n"
    "  SIGSTOPped for 3 s; counts the worlds that broke (should be none)\n"
    "  --trials N      rounds per load, each with fresh processes and worlds (default 3)\n"
    "usage: mw_bench allreduce [--backend B] [--json FILE] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B]\n"
    "                          [--redis URL]\n"
    "  float32 sum over 2 and 4 processes against raw gloo::allreduce; --min-bytes defaults to 4, --max-bytes to\n"
    "  64M, sizes grow by 4x; --iters N fixes the iterations per round (default: clamp(16M / bytes, 2, 300));\n"
    "  --rounds R (default 5)\n"
    "usage: mw_bench create [--backend B] [--trials N] [--json FILE]\n"
    "  --trials N      sequential creates per world size (2 and 8) (default 30); the concurrent case\n"
    "                  (64 worlds by 2 processes at once) runs max(3, N/6) times. Always uses a private\n"
    "                  redis-server on TCP 127.0.0.1, shared by ours and raw\n"
    "usage: mw_bench resize [--backend B] [--trials N] [--members LIST] [--json FILE] [--redis URL]\n"
    "  a world of this host's processes shrinks after a member is killed (SIGKILL) and grows by one, against\n"
    "  destroying and creating it again under its name (shrink) or creating a world of the new size (grow), each\n"
    "  with its first allreduce: UCX at 4, 16 and 64 members with same_host_path auto and off, Gloo at 4 and 16\n"
    "  (--backend: only that backend's; --members LIST, comma-separated: only those sizes). --trials N (default\n"
    "  20) alternates the two ways. JSON rows: backend, same_host_path, members, kind, resize_ms_p50,\n"
    "  resize_ms_p99, recreate_ms_p50, ratio\n"
    "usage: mw_bench control [--backend B] [--seconds S] [--json FILE]\n"
    "  the control plane's load on Redis at the default heartbeat settings: Redis commands/s per member and the\n"
    "  heartbeat round trip for 1, 4, 100 and 1000 simulated members (the watchdog's own rounds, each member in\n"
    "  two worlds), checked against 4 real contexts; Redis's capacity for that load, and the members one Redis\n"
    "  serves at <= 50% of it. --seconds S per measurement (default 5). Always a private redis-server on TCP\n"
    "  127.0.0.1\n"
    "usage: mw_bench poll [--backend B] [--iters N] [--json FILE] [--redis URL]\n"
    "  --iters N       64-byte messages per measurement (default 10000); also counts threads with 1, 64 and\n"
    "                  256 worlds open\n"
    "usage: mw_bench fanin [--backend B] [--iters N] [--max-senders K] [--json FILE] [--redis URL]\n"
    "  --iters N       64 KiB messages per sender (default 1000)\n"
    "  --max-senders K largest sender count of 1, 4, 16, 32 to run (default 32)\n"
    "usage: mw_bench failover [--trials N] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B] [--parts LIST]\n"
    "                         [--json FILE]\n"
    "  UCX worlds whose members (in network namespaces made by the run; needs root) have two paths, over two\n"
    "  links (veth pairs; bridges for 3 members). Stall: a checked p2p stream and a 3-member allreduce loop,\n"
    "  each under --trials N cuts (default 20) of the link carrying it, taken down and dropping every packet;\n"
    "  p50/p99 of the time from the cut to the next delivery, and messages lost, duplicated and reordered.\n"
    "  Overhead: p2p throughput with path_failover on against off for --min-bytes (default 64K) to --max-bytes\n"
    "  (default 4M), sizes growing by 4x; --iters N messages per measurement (default clamp(64 MiB / bytes,\n"
    "  8, 2000)); --rounds R alternating rounds, median (default 5). Always a private redis-server on a unix\n"
    "  socket; --backend is ucx. Without root it says why (also in the JSON) and exits 0.\n"
    "  --parts LIST    which parts run, comma-separated: p2p, allreduce (stall rows), overhead (default: all)\n"
    "usage: mw_bench soak [--backend B] [--minutes M] [--seed S] [--processes N] [--rails 1|2] [--faults LIST]\n"
    "                     [--json FILE] [--heartbeat-interval-ms N] [--heartbeat-timeout-ms N]\n"
    "  --processes N (3..16, default 6) member processes, each in two checked p2p stream worlds (a ring of pairs)\n"
    "  and some in three-member allreduce worlds, under random faults one at a time: kill9, sigstop_short,\n"
    "  sigstop_long, cut_one_rail, cut_all_rails, redis_pause, redis_failover, churn, cancel (and shrink, with\n"
    "  --faults only: a member of an allreduce world killed, the others shrink it, its replacement grows it back).\n"
    "  Redis is a Sentinel\n"
    "  group of the run's own. Checks all the time: no crash, no message lost, duplicated or corrupt, no false or\n"
    "  missed break, no fd/thread/RSS growth, Redis answering PINGs within 50 ms\n"
    "  --minutes M     how long faults are injected (default 10; fractions allowed)\n"
    "  --seed S        the schedule's seed (default: from the clock, printed): the same seed, the same faults\n"
    "  --rails R       2 (default): members in network namespaces joined by two rails (needs root; UCX only);\n"
    "                  1: members share this host's network, and the link faults are skipped\n"
    "  --faults LIST   comma-separated kinds to inject (default: all that can run here but shrink)\n"
    "usage: mw_bench nccl [--json FILE] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B] [--device N]\n"
    "                     [--redis URL]\n"
    "  one GPU, world size 1: multiworld's NCCL world against a raw ncclComm, float32 allreduce and send/recv\n"
    "  to self; --min-bytes (a multiple of 4) defaults to 4, --max-bytes to 256M, sizes grow by 4x;\n"
    "  --iters N fixes the operations per round (default: clamp(1G / bytes, 5, 200)); --rounds R (default 5);\n"
    "  --device N      the CUDA device (default 0)\n"
    "  Then 2 ranks, each its own process (sharing the GPU, each its own NCCL_HOSTID, where there is one):\n"
    "  allreduce, broadcast and p2p of 1M..256M (within --min-bytes..--max-bytes, else the largest size)\n"
    "  against a raw 2-rank ncclComm (--iters N per run, else ~0.25 s; R rounds). Then kill -9\n"
    "  isolation: a peer killed in one world, its break timed, and the throughput of another world of the\n"
    "  same process before and after. Each part has a time limit; a failed part says so and the next runs.\n"
    "  Without a usable GPU it says why (also in the JSON) and exits 0.\n"
#if !MWBENCH_HAVE_NCCL
    "  Not built here: no CUDA toolkit/NCCL at build time.\n"
#endif
    ;

bool parseCount(const std::string& text, bool allow_suffix, std::size_t* out) {
  if (text.empty() || text[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str()) return false;
  unsigned long long mult = 1;
  std::string suffix = end;
  if (allow_suffix && suffix.size() == 1) {
    switch (suffix[0]) {
      case 'k': case 'K': mult = 1ULL << 10; break;
      case 'm': case 'M': mult = 1ULL << 20; break;
      case 'g': case 'G': mult = 1ULL << 30; break;
      default: return false;
    }
  } else if (!suffix.empty()) {
    return false;
  }
  if (v > (~0ULL) / mult) return false;
  *out = static_cast<std::size_t>(v * mult);
  return true;
}

// A comma-separated list into *out; false when it is empty or an item is
// not `known`.
bool parseList(const std::string& value, const std::function<bool(const std::string&)>& known,
               std::vector<std::string>* out) {
  out->clear();
  if (value.empty()) return false;
  for (std::size_t at = 0; at <= value.size();) {
    const std::size_t comma = std::min(value.find(',', at), value.size());
    out->push_back(value.substr(at, comma - at));
    if (!known(out->back())) return false;
    at = comma + 1;
  }
  return true;
}

std::string shellQuote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                            "-_./=:,+@%") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

int mwbench::benchMain(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string suite = argv[1];
  if (suite != "p2p" && suite != "faults" && suite != "falsebreaks" && suite != "allreduce" && suite != "create" &&
      suite != "control" && suite != "poll" && suite != "fanin" && suite != "failover" && suite != "nccl" &&
      suite != "soak" && suite != "resize") {
    std::fprintf(stderr, "mw_bench: unknown suite '%s'\n%s", argv[1], kUsage);
    return 2;
  }
#if !MWBENCH_HAVE_NCCL
  if (suite == "nccl") {
    std::fprintf(stderr, "mw_bench nccl: not built: no CUDA toolkit/NCCL at build time\n");
    return 2;
  }
#endif
  const bool faults = suite == "faults";

  mwbench::BenchOptions opt;
  bool min_bytes_given = false, trials_given = false;
  bool max_bytes_given = false;  // the nccl and failover suites have their own default
  // The command as it would be typed again: the UCX_* variables in force
  // first, as they change what UCX does.
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "UCX_", 4) == 0) opt.command += shellQuote(*e) + " ";
  }
  for (int i = 0; i < argc; ++i) opt.command += (i ? " " : "") + shellQuote(argv[i]);

  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    bool known = arg == "--json" || arg == "--redis" || (suite != "nccl" && arg == "--backend") ||
                 ((suite == "p2p" || suite == "poll" || suite == "fanin" || suite == "allreduce") && arg == "--spin-us") ||
                 ((suite == "p2p" || suite == "allreduce") && arg == "--metrics");
    if (suite == "p2p" || suite == "allreduce" || suite == "nccl") {
      known = known || arg == "--iters" || arg == "--rounds" || arg == "--min-bytes" || arg == "--max-bytes" ||
              (suite == "nccl" && arg == "--device");
    } else if (suite == "faults") {
      known = known || arg == "--trials" || arg == "--heartbeat-interval-ms" || arg == "--heartbeat-timeout-ms" ||
              arg == "--healthy-bytes";
    } else if (suite == "falsebreaks") {
      known = arg == "--json" || arg == "--backend" || arg == "--trials" || arg == "--heartbeat-interval-ms" ||
              arg == "--heartbeat-timeout-ms";
    } else if (suite == "create") {
      known = arg == "--json" || arg == "--trials" || arg == "--backend";
    } else if (suite == "resize") {
      known = known || arg == "--trials" || arg == "--members";
    } else if (suite == "control") {
      known = arg == "--json" || arg == "--seconds" || arg == "--backend";
    } else if (suite == "poll") {
      known = known || arg == "--iters";
    } else if (suite == "fanin") {
      known = known || arg == "--iters" || arg == "--max-senders";
    } else if (suite == "soak") {
      known = arg == "--json" || arg == "--backend" || arg == "--minutes" || arg == "--seed" || arg == "--processes" ||
              arg == "--rails" || arg == "--faults" || arg == "--heartbeat-interval-ms" ||
              arg == "--heartbeat-timeout-ms";
    } else if (suite == "failover") {
      known = arg == "--json" || arg == "--trials" || arg == "--iters" || arg == "--rounds" || arg == "--min-bytes" ||
              arg == "--max-bytes" || arg == "--parts";
    }
    if (!known) {
      std::fprintf(stderr, "mw_bench %s: unknown option '%s'\n%s", suite.c_str(), argv[i], kUsage);
      return 2;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mw_bench %s: %s needs a value\n", suite.c_str(), arg.c_str());
        return 2;
      }
      value = argv[++i];
    }
    bool good = true;
    if (arg == "--json") {
      good = !value.empty();
      opt.json_path = value;
    } else if (arg == "--backend") {
      good = value == "ucx" || value == "gloo";
      opt.ucx = value == "ucx";
      opt.backend_given = true;
    } else if (arg == "--spin-us") {
      std::size_t spin = 0;
      good = parseCount(value, false, &spin) && spin <= 1000000;
      opt.spin_us = static_cast<int>(spin);
    } else if (arg == "--metrics") {
      good = value == "on" || value == "off" || value == "compare";
      opt.metrics = value;
    } else if (arg == "--redis") {
      good = !value.empty();
      opt.redis_url = value;
    } else if (arg == "--iters") {
      good = parseCount(value, false, &opt.iters) && opt.iters > 0;
    } else if (arg == "--rounds") {
      good = parseCount(value, false, &opt.rounds) && opt.rounds > 0;
    } else if (arg == "--min-bytes") {
      good = parseCount(value, true, &opt.min_bytes) && opt.min_bytes > 0;
      min_bytes_given = true;
    } else if (arg == "--max-bytes") {
      good = parseCount(value, true, &opt.max_bytes) && opt.max_bytes > 0;
      max_bytes_given = true;
    } else if (arg == "--trials") {
      good = parseCount(value, false, &opt.trials) && opt.trials > 0 && opt.trials <= 100000;
      trials_given = true;
    } else if (arg == "--healthy-bytes") {
      // Checked 32-bit words.
      good = parseCount(value, true, &opt.healthy_bytes) && opt.healthy_bytes >= 4 &&
             opt.healthy_bytes <= (16u << 20) && opt.healthy_bytes % 4 == 0;
    } else if (arg == "--heartbeat-interval-ms" || arg == "--heartbeat-timeout-ms") {
      std::size_t ms = 0;
      good = parseCount(value, false, &ms) && ms > 0 && ms <= 3600000;
      (arg == "--heartbeat-interval-ms" ? opt.heartbeat_interval_ms : opt.heartbeat_timeout_ms) = static_cast<int>(ms);
    } else if (arg == "--seconds") {
      std::size_t secs = 0;
      good = parseCount(value, false, &secs) && secs > 0 && secs <= 3600;
      opt.seconds = static_cast<double>(secs);
    } else if (arg == "--parts") {
      good = parseList(value, [](const std::string& p) { return p == "p2p" || p == "allreduce" || p == "overhead"; },
                       &opt.parts);
    } else if (arg == "--minutes") {
      char* end = nullptr;
      errno = 0;
      opt.minutes = std::strtod(value.c_str(), &end);
      good = errno == 0 && end != value.c_str() && *end == '\0' && opt.minutes > 0 && opt.minutes <= 7 * 24 * 60;
    } else if (arg == "--seed") {
      std::size_t seed = 0;
      good = parseCount(value, false, &seed);
      opt.seed = seed;
      opt.seed_given = true;
    } else if (arg == "--processes") {
      std::size_t n = 0;
      good = parseCount(value, false, &n) && n >= 3 && n <= 16;
      opt.processes = static_cast<int>(n);
    } else if (arg == "--rails") {
      good = value == "1" || value == "2";
      opt.rails = value == "2" ? 2 : 1;
    } else if (arg == "--faults") {
      good = parseList(value,
                       [](const std::string& f) {
                         mwbench::soak::FaultKind kind;
                         return mwbench::soak::faultFromName(f, &kind);
                       },
                       &opt.faults);
    } else if (arg == "--members") {
      std::vector<std::string> sizes;
      good = parseList(value, [](const std::string& m) { return m == "4" || m == "16" || m == "64"; }, &sizes);
      for (const std::string& m : sizes) opt.members.push_back(std::stoi(m));
    } else if (arg == "--max-senders") {
      good = parseCount(value, false, &opt.max_senders) && opt.max_senders > 0 && opt.max_senders <= 64;
    } else if (arg == "--device") {
      std::size_t device = 0;
      good = parseCount(value, false, &device) && device <= 65535;
      opt.device = static_cast<int>(device);
    }
    if (!good) {
      std::fprintf(stderr, "mw_bench %s: bad value '%s' for %s\n", suite.c_str(), value.c_str(), arg.c_str());
      return 2;
    }
  }
  if (suite == "allreduce") {
    if (!min_bytes_given) opt.min_bytes = 4;
    return mwbench::runAllreduceSuite(opt);
  }
  if (suite == "create") {
    if (!trials_given) opt.trials = 30;
    return mwbench::runCreateSuite(opt);
  }
  if (suite == "control") return mwbench::runControlSuite(opt);
  if (suite == "resize") {
    if (!trials_given) opt.trials = 20;
    return mwbench::runResizeSuite(opt);
  }
  if (suite == "falsebreaks") {
    if (!trials_given) opt.trials = 3;
    return mwbench::runFalseBreaksSuite(opt);
  }
  if (suite == "poll") return mwbench::runPollSuite(opt);
  if (suite == "soak") return mwbench::runSoakSuite(opt);
  if (suite == "fanin") return mwbench::runFaninSuite(opt);
  if (suite == "failover") {
    if (!min_bytes_given) opt.min_bytes = std::size_t{64} << 10;
    if (!max_bytes_given) opt.max_bytes = std::size_t{4} << 20;
    return mwbench::runFailoverSuite(opt);
  }
#if MWBENCH_HAVE_NCCL
  if (suite == "nccl") {
    if (!min_bytes_given) opt.min_bytes = 4;
    if (!max_bytes_given) opt.max_bytes = std::size_t{256} << 20;
    return mwbench::runNcclSuite(opt);
  }
#endif
  return faults ? mwbench::runFaultsSuite(opt) : mwbench::runP2pSuite(opt);
}
