// The benchmarks' command line, shared by mw_bench and `multiworld bench`:
// benchmarks of multiworld against the transport underneath.
//
//   mw_bench p2p [--json FILE] [--iters N] [--rounds R] [--min-bytes B]
//                [--max-bytes B] [--redis URL]
//   mw_bench faults [--trials N] [--json FILE] [--redis URL]
//
// Byte counts take an optional K, M or G suffix (powers of 1024).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/faults_suite.h"
#include "bench/p2p_suite.h"

namespace {

const char kUsage[] =
    "usage: mw_bench p2p [--json FILE] [--iters N] [--rounds R] [--min-bytes B] [--max-bytes B] [--redis URL]\n"
    "  --json FILE     also write the results as JSON\n"
    "  --iters N       iterations per round and size (default: calibrated to ~0.1 s per round)\n"
    "  --rounds R      alternating ours/raw rounds per size, median reported (default 5)\n"
    "  --min-bytes B   smallest message (default 64); sizes grow by 4x\n"
    "  --max-bytes B   largest message (default 64M)\n"
    "  --redis URL     Redis for multiworld (default: MW_REDIS_URL, else a private redis-server)\n"
    "usage: mw_bench faults [--trials N] [--json FILE] [--redis URL]\n"
    "  --trials N      trials per fault kind (kill9, sigstop, partition) for detection latency (default 20)\n"
    "  --json FILE     also write the results as JSON\n"
    "  --redis URL     Redis for multiworld (default: a private redis-server; MW_REDIS_URL is not used);\n"
    "                  with --redis the partition kind is skipped, as it needs the private one\n";

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
  if (suite != "p2p" && suite != "faults") {
    std::fprintf(stderr, "mw_bench: unknown suite '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  const bool faults = suite == "faults";

  mwbench::BenchOptions opt;
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
    const bool known = arg == "--json" || arg == "--redis" ||
                       (faults ? arg == "--trials"
                               : arg == "--iters" || arg == "--rounds" || arg == "--min-bytes" ||
                                     arg == "--max-bytes");
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
    } else if (arg == "--redis") {
      good = !value.empty();
      opt.redis_url = value;
    } else if (arg == "--iters") {
      good = parseCount(value, false, &opt.iters) && opt.iters > 0;
    } else if (arg == "--rounds") {
      good = parseCount(value, false, &opt.rounds) && opt.rounds > 0;
    } else if (arg == "--min-bytes") {
      good = parseCount(value, true, &opt.min_bytes) && opt.min_bytes > 0;
    } else if (arg == "--max-bytes") {
      good = parseCount(value, true, &opt.max_bytes) && opt.max_bytes > 0;
    } else if (arg == "--trials") {
      good = parseCount(value, false, &opt.trials) && opt.trials > 0 && opt.trials <= 100000;
    }
    if (!good) {
      std::fprintf(stderr, "mw_bench %s: bad value '%s' for %s\n", suite.c_str(), value.c_str(), arg.c_str());
      return 2;
    }
  }
  return faults ? mwbench::runFaultsSuite(opt) : mwbench::runP2pSuite(opt);
}
