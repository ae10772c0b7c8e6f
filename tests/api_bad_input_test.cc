// Bad input through the C API: NULL pointers, out-of-range numbers, bad
// names, overflowing sizes, unknown enum values and config settings. Every
// failing call must return its documented status and leave a last error that
// names the offending parameter or value; nothing may crash or abort.
//
// Operation tests run on real worlds: size-1 worlds form without peers, and
// one size-2 world is formed by two contexts of this process on two threads.
#include <multiworld/multiworld.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/redis_server.h"
#include "tools/lab/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;

// ---- helpers ---------------------------------------------------------------

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string lastErrorText() {
  const char* e = mw_last_error();
  return e ? std::string(e) : std::string("<mw_last_error() returned NULL>");
}

// Leaves a known message as this thread's last error, so a check that follows
// cannot be satisfied by a stale message from an earlier call.
constexpr const char* kPrimeKey = "zz_primer_key_zz";
void primeLastError() {
  mw_config_t* cfg = nullptr;
  if (mw_config_new(&cfg) == MW_OK) {
    (void)mw_config_set(cfg, kPrimeKey, "x");
    mw_config_free(cfg);
  }
}

::testing::AssertionResult failsWith(const char* call, mw_status_t got, mw_status_t want,
                                     const std::string& err, const std::vector<std::string>& needles) {
  const char* got_name = mw_status_string(got);
  if (got != want) {
    return ::testing::AssertionFailure()
           << call << "\n  returned " << (got_name ? got_name : "?") << " (" << static_cast<int>(got)
           << "), want " << mw_status_string(want) << "\n  last error: " << printable(err);
  }
  if (err.find(kPrimeKey) != std::string::npos) {
    return ::testing::AssertionFailure() << call << "\n  failed without setting mw_last_error() (still: "
                                         << printable(err) << ")";
  }
  for (const auto& n : needles) {
    if (err.find(n) == std::string::npos) {
      return ::testing::AssertionFailure() << call << "\n  last error \"" << printable(err)
                                           << "\" does not mention \"" << printable(n) << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

// EXPECT_MW_FAIL(status, call, "needle", ...): `call` returns `status` and the
// last error contains every needle.
#define EXPECT_MW_FAIL(want, call, ...)                                                      \
  do {                                                                                       \
    primeLastError();                                                                        \
    const mw_status_t got_ = (call);                                                         \
    const std::string err_ = lastErrorText();                                                \
    EXPECT_TRUE(failsWith(#call, got_, (want), err_, std::vector<std::string>{__VA_ARGS__})); \
  } while (0)

#define EXPECT_MW_OK(call)                                                                   \
  do {                                                                                       \
    const mw_status_t got_ = (call);                                                         \
    EXPECT_EQ(got_, MW_OK) << #call << ": " << mw_status_string(got_) << " ("                \
                           << printable(lastErrorText()) << ")";                             \
  } while (0)

std::string num(long long v) { return std::to_string(v); }
std::string unum(unsigned long long v) { return std::to_string(v); }

// Enum values outside the declared enumerators, as a C caller could pass them.
mw_dtype_t dtypeValue(int v) { return static_cast<mw_dtype_t>(v); }
mw_redop_t redopValue(int v) { return static_cast<mw_redop_t>(v); }
mw_backend_t backendValue(int v) { return static_cast<mw_backend_t>(v); }
mw_status_t statusValue(int v) { return static_cast<mw_status_t>(v); }

// A non-NULL pointer that is not a request; a failed issue must not leave it.
mw_request_t* sentinelRequest() {
  static int dummy;
  return reinterpret_cast<mw_request_t*>(&dummy);
}
mw_world_t* sentinelWorld() {
  static int dummy;
  return reinterpret_cast<mw_world_t*>(&dummy);
}
mw_context_t* sentinelContext() {
  static int dummy;
  return reinterpret_cast<mw_context_t*>(&dummy);
}

mw_config_t* newConfig(const std::vector<std::pair<std::string, std::string>>& settings = {}) {
  mw_config_t* cfg = nullptr;
  EXPECT_EQ(mw_config_new(&cfg), MW_OK) << lastErrorText();
  for (const auto& [k, v] : settings) {
    EXPECT_EQ(mw_config_set(cfg, k.c_str(), v.c_str()), MW_OK) << k << "=" << v << ": " << lastErrorText();
  }
  return cfg;
}

std::string uniqueName(const char* stem) {
  static std::atomic<int> counter{0};
  return std::string(stem) + "-" + std::to_string(counter.fetch_add(1));
}

// ---- the operations, table-driven ------------------------------------------

enum class Role { None, Dst, Src, Root };

struct OpCase {
  const char* name;
  Role role;
  bool reduces;
  bool uses_send;  // on rank 0 of a size-1 world, with root 0
  bool uses_recv;
  // dtype and redop travel as int and become enum values only at the call,
  // so no out-of-range enum object is ever loaded on this side.
  std::function<mw_status_t(mw_world_t*, const void* send, void* recv, size_t count, int dtype, int redop,
                            int peer, mw_request_t**)>
      issue;
};

const char* roleName(Role r) {
  switch (r) {
    case Role::Dst: return "dst";
    case Role::Src: return "src";
    case Role::Root: return "root";
    case Role::None: break;
  }
  return "";
}

const std::vector<OpCase>& ops() {
  static const std::vector<OpCase> k = {
      {"send", Role::Dst, false, true, false,
       [](mw_world_t* w, const void* s, void*, size_t n, int dt, int, int p, mw_request_t** r) {
         return mw_send_async(w, s, n, dtypeValue(dt), p, r);
       }},
      {"recv", Role::Src, false, false, true,
       [](mw_world_t* w, const void*, void* d, size_t n, int dt, int, int p, mw_request_t** r) {
         return mw_recv_async(w, d, n, dtypeValue(dt), p, r);
       }},
      {"broadcast", Role::Root, false, false, true,
       [](mw_world_t* w, const void*, void* d, size_t n, int dt, int, int p, mw_request_t** r) {
         return mw_broadcast_async(w, d, n, dtypeValue(dt), p, r);
       }},
      {"allreduce", Role::None, true, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int op, int, mw_request_t** r) {
         return mw_allreduce_async(w, s, d, n, dtypeValue(dt), redopValue(op), r);
       }},
      {"reduce", Role::Root, true, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int op, int p, mw_request_t** r) {
         return mw_reduce_async(w, s, d, n, dtypeValue(dt), redopValue(op), p, r);
       }},
      {"allgather", Role::None, false, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int, int, mw_request_t** r) {
         return mw_allgather_async(w, s, d, n, dtypeValue(dt), r);
       }},
      {"gather", Role::Root, false, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int, int p, mw_request_t** r) {
         return mw_gather_async(w, s, d, n, dtypeValue(dt), p, r);
       }},
      {"scatter", Role::Root, false, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int, int p, mw_request_t** r) {
         return mw_scatter_async(w, s, d, n, dtypeValue(dt), p, r);
       }},
      {"reduce_scatter", Role::None, true, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int op, int, mw_request_t** r) {
         return mw_reduce_scatter_async(w, s, d, n, dtypeValue(dt), redopValue(op), r);
       }},
      {"alltoall", Role::None, false, true, true,
       [](mw_world_t* w, const void* s, void* d, size_t n, int dt, int, int, mw_request_t** r) {
         return mw_alltoall_async(w, s, d, n, dtypeValue(dt), r);
       }},
  };
  return k;
}

// Big enough for any valid call these tests make on worlds of size <= 2.
struct Buffers {
  alignas(16) unsigned char send[256] = {};
  alignas(16) unsigned char recv[256] = {};
};

// ---- library-level entry points (no Redis needed) --------------------------

TEST(LibraryBadInput, VersionMatchesVersionString) {
  const char* vs = mw_version_string();
  ASSERT_NE(vs, nullptr);
  int major = -1, minor = -1, patch = -1;
  mw_version(&major, &minor, &patch);
  EXPECT_EQ(major, MW_VERSION_MAJOR);
  EXPECT_EQ(minor, MW_VERSION_MINOR);
  EXPECT_EQ(patch, MW_VERSION_PATCH);
  EXPECT_EQ(std::string(vs), num(major) + "." + num(minor) + "." + num(patch));

  // Each output may be NULL, one at a time and all together.
  int a = -1, b = -1, c = -1;
  mw_version(nullptr, &b, &c);
  EXPECT_EQ(b, MW_VERSION_MINOR);
  EXPECT_EQ(c, MW_VERSION_PATCH);
  a = b = c = -1;
  mw_version(&a, nullptr, &c);
  EXPECT_EQ(a, MW_VERSION_MAJOR);
  EXPECT_EQ(c, MW_VERSION_PATCH);
  a = b = c = -1;
  mw_version(&a, &b, nullptr);
  EXPECT_EQ(a, MW_VERSION_MAJOR);
  EXPECT_EQ(b, MW_VERSION_MINOR);
  mw_version(nullptr, nullptr, nullptr);
}

TEST(LibraryBadInput, StatusStringForEveryStatusAndUnknownValues) {
  const mw_status_t all[] = {MW_OK,
                             MW_IN_PROGRESS,
                             MW_ERR_INVALID_ARGUMENT,
                             MW_ERR_NOT_FOUND,
                             MW_ERR_ALREADY_EXISTS,
                             MW_ERR_TIMEOUT,
                             MW_ERR_WORLD_BROKEN,
                             MW_ERR_STORE,
                             MW_ERR_BACKEND,
                             MW_ERR_UNSUPPORTED,
                             MW_ERR_CANCELLED,
                             MW_ERR_INTERNAL,
                             MW_ERR_NO_MEMORY};
  std::set<std::string> seen;
  for (mw_status_t s : all) {
    const char* name = mw_status_string(s);
    ASSERT_NE(name, nullptr) << static_cast<int>(s);
    EXPECT_GT(std::strlen(name), 0u) << static_cast<int>(s);
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
  }
  for (int v : {2, 3, -12, -13, 42, 1000, -1000, INT_MAX, INT_MIN}) {
    const char* name = mw_status_string(statusValue(v));
    ASSERT_NE(name, nullptr) << v;
    EXPECT_GT(std::strlen(name), 0u) << v;
    EXPECT_EQ(seen.count(name), 0u) << v << " is named like a real status: " << name;
  }
}

TEST(LibraryBadInput, LastErrorNeverNullAndThreadLocal) {
  std::string in_thread = "unset";
  std::thread([&] {
    const char* e = mw_last_error();
    in_thread = e ? e : "<NULL>";
  }).join();
  EXPECT_NE(in_thread, "<NULL>");

  ASSERT_NE(mw_last_error(), nullptr);
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_new(nullptr), "out", "NULL");
  // Another thread does not see this thread's error.
  std::string other;
  std::thread([&] {
    const char* e = mw_last_error();
    other = e ? e : "<NULL>";
  }).join();
  EXPECT_NE(other, "<NULL>");
  EXPECT_EQ(other.find("out is NULL"), std::string::npos) << other;

  // Still non-NULL after successful calls.
  mw_config_t* cfg = nullptr;
  ASSERT_EQ(mw_config_new(&cfg), MW_OK);
  EXPECT_NE(mw_last_error(), nullptr);
  mw_config_free(cfg);
  EXPECT_NE(mw_last_error(), nullptr);
}

TEST(LibraryBadInput, BackendAvailable) {
  EXPECT_EQ(mw_backend_available(MW_BACKEND_GLOO), 1);  // NCCL: nccl_test
  EXPECT_EQ(mw_backend_available(MW_BACKEND_UCX), 1);
  for (int v : {0, 4, -1, 1000, INT_MIN, INT_MAX}) {
    EXPECT_EQ(mw_backend_available(backendValue(v)), 0) << v;
  }
}

TEST(LibraryBadInput, FreeAndDestroyAcceptNull) {
  mw_config_free(nullptr);
  mw_context_free(nullptr);
  mw_request_free(nullptr);
  EXPECT_EQ(mw_world_destroy(nullptr), MW_OK) << lastErrorText();
}

TEST(LibraryBadInput, GettersOnNull) {
  EXPECT_EQ(mw_world_rank(nullptr), -1);
  EXPECT_EQ(mw_world_size(nullptr), -1);
  const char* name = mw_world_name(nullptr);
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "");
  EXPECT_NE(mw_world_state(nullptr), MW_WORLD_READY);
  EXPECT_EQ(mw_world_state(nullptr), MW_WORLD_BROKEN);
  EXPECT_EQ(mw_world_epoch(nullptr), 0u);
  mw_request_set_user_data(nullptr, 42);
  EXPECT_EQ(mw_request_user_data(nullptr), 0u);
}

TEST(LibraryBadInput, NullHandlesWithoutAContext) {
  Buffers b;
  // config
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_new(nullptr), "out", "NULL");
  mw_config_t* cfg = newConfig();
  ASSERT_NE(cfg, nullptr);
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_set(nullptr, "namespace", "x"), "cfg", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_set(cfg, nullptr, "x"), "key", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_set(cfg, "namespace", nullptr), "value", "NULL");
  // context
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_context_new(cfg, nullptr), "out", "NULL");
  mw_config_free(cfg);
  // world
  mw_world_t* w = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                 mw_world_create(nullptr, "w", 0, 1, mwtest::hostBackend(), 0, 1000, &w), "ctx", "NULL");
  // operations on a NULL world
  for (const auto& op : ops()) {
    SCOPED_TRACE(op.name);
    mw_request_t* req = sentinelRequest();
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(nullptr, b.send, b.recv, 1, MW_FLOAT32, MW_SUM, 0, &req),
                   "world", "NULL");
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(nullptr, b.send, b.recv, 1, MW_FLOAT32, MW_SUM, 0, nullptr),
                   "NULL");
  }
  mw_request_t* req = sentinelRequest();
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_barrier_async(nullptr, &req), "world", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_barrier_async(nullptr, nullptr), "NULL");
  // completion
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_test(nullptr), "req", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_wait(nullptr, 0), "req", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_wait(nullptr, -1), "req", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_wait(nullptr, -2), "NULL");
  mw_completion_t c[2];
  size_t n = 7;
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(nullptr, c, 2, 0, &n), "ctx", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(nullptr, c, 2, -1, &n), "ctx", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(nullptr, c, 2, 0, nullptr), "NULL");
  // events
  mw_event_t e;
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_next_event(nullptr, &e, 0), "ctx", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_next_event(nullptr, &e, -1), "ctx", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_next_event(nullptr, nullptr, 0), "NULL");
}

// ---- configuration -----------------------------------------------------------

class ConfigBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mw_config_new(&cfg_), MW_OK) << lastErrorText();
  }
  void TearDown() override { mw_config_free(cfg_); }

  void expectRejected(const std::string& key, const std::string& value,
                      std::vector<std::string> extra_needles = {}) {
    SCOPED_TRACE("config " + printable(key) + " = '" + printable(value) + "'");
    std::vector<std::string> needles = {key};
    for (auto& n : extra_needles) needles.push_back(std::move(n));
    primeLastError();
    mw_status_t s = mw_config_set(cfg_, key.c_str(), value.c_str());
    EXPECT_TRUE(failsWith("mw_config_set", s, MW_ERR_INVALID_ARGUMENT, lastErrorText(), needles));
  }
  void expectAccepted(const std::string& key, const std::string& value) {
    EXPECT_EQ(mw_config_set(cfg_, key.c_str(), value.c_str()), MW_OK)
        << key << " = '" << printable(value) << "': " << lastErrorText();
  }

  mw_config_t* cfg_ = nullptr;
};

TEST_F(ConfigBadInput, UnknownKeys) {
  for (std::string key : {"", "unknown_key", "redis-url", "REDIS_URL", "Namespace", "namespace ", " namespace",
                          "op_timeout", "heartbeat_interval", "log-level", "heartbeat_interval_ms\n",
                          "redis_url\xc3\xa9", "redis_url=redis://h"}) {
    expectRejected(key, "1", {"'" + key + "'"});
  }
}

TEST_F(ConfigBadInput, NumericKeys) {
  struct Range {
    const char* key;
    long long min, max;
  };
  const Range ranges[] = {{"heartbeat_interval_ms", 10, 60000},
                          {"heartbeat_timeout_ms", 20, 3600000},
                          {"op_timeout_ms", 0, 24LL * 3600 * 1000},
                          {"store_timeout_ms", 10, 600000},
                          {"path_timeout_ms", 1, 3600000},
                          {"max_world_size", 1, INT_MAX},
                          {"same_host_min_bytes", 1, 1LL << 40}};
  const std::vector<std::string> junk = {"",     "abc",  "-1",   "-5",    "12abc", "100 ", "100ms",
                                         "1.5",  "0x10", "1e3",  "--5",   "5-",    "\n",   "100\n",
                                         "99999999999999999999", "9223372036854775807",
                                         "-9223372036854775808", "-9223372036854775809", "18446744073709551616"};
  for (const auto& r : ranges) {
    for (const auto& v : junk) {
      // Quote the value so that "" is named too.
      expectRejected(r.key, v, {"'" + v + "'"});
    }
    if (r.min > 0) expectRejected(r.key, num(r.min - 1), {"'" + num(r.min - 1) + "'"});
    expectRejected(r.key, num(r.max + 1), {"'" + num(r.max + 1) + "'"});
    expectRejected(r.key, num(r.max * 10), {"'" + num(r.max * 10) + "'"});
    expectAccepted(r.key, num(r.min));
    expectAccepted(r.key, num(r.max));
  }
}

TEST_F(ConfigBadInput, RedisUrl) {
  const std::vector<std::string> bad = {
      "",
      "localhost:6379",
      "127.0.0.1",
      "http://127.0.0.1:6379",
      "rediss://127.0.0.1:6379",
      "tcp://127.0.0.1:6379",
      "redis:/127.0.0.1:6379",
      "redis:127.0.0.1:6379",
      "redis//127.0.0.1:6379",
      "redis://",
      "redis://:6379",
      "redis://host:",
      "redis://host:0",
      "redis://host:65536",
      "redis://host:99999999999999999999",
      "redis://host:-1",
      "redis://host:abc",
      "redis://host:6379x",
      "redis://host:6379:1",
      "redis://host:6379/abc",
      "redis://host:6379/-1",
      "redis://host:6379/99999999999",
      "redis://host:6379?db=1",
      "redis://ho st:6379",
      "redis://host\n:6379",
      "redis://h{x}:6379",
      "redis://h\xc3\xa9:6379",
      "redis://[::1:6379",
      "redis://[]:6379",
      "redis://[zz]:6379",
      "unix://",
      "unix://relative.sock",
      "unix:///",
      "unix:///tmp/dir/",
      "unix:///tmp/x.sock?db=x",
      "unix:///tmp/x.sock?db=-1",
      "unix:///tmp/x.sock?foo=1",
      " redis://127.0.0.1:6379",
      "redis://127.0.0.1:6379 ",
  };
  for (const auto& url : bad) expectRejected("redis_url", url, {"'" + url + "'"});

  // A rejected URL's password never shows up in the message.
  const std::string secret = "s3cr3tpw";
  for (std::string url : {"redis://user:" + secret + "@host:0", "redis://:" + secret + "@host:notaport",
                          "redis://user:" + secret + "@host:6379/x"}) {
    SCOPED_TRACE(url);
    primeLastError();
    EXPECT_EQ(mw_config_set(cfg_, "redis_url", url.c_str()), MW_ERR_INVALID_ARGUMENT);
    std::string err = lastErrorText();
    EXPECT_NE(err.find("redis_url"), std::string::npos) << err;
    EXPECT_NE(err.find("host"), std::string::npos) << err;
    EXPECT_EQ(err.find(secret), std::string::npos) << "password leaked: " << err;
  }

  for (std::string url : {"redis://127.0.0.1:6379", "redis://h", "redis://h:1", "redis://h:65535/0",
                          "redis://user:pw@h:6379/3", "redis://[::1]:6379", "REDIS://H:1",
                          "unix:///tmp/x.sock", "unix:///tmp/x.sock?db=2"}) {
    expectAccepted("redis_url", url);
  }
}

TEST_F(ConfigBadInput, Namespace) {
  const std::vector<std::string> bad = {"",    std::string(65, 'n'), "a b",   "a/b",  "{mw}",     "mw\n",
                                        "a\tb", "na\xc3\xafve",       "a*b",   "a@b",  "mw{tag}x", "a,b",
                                        " mw",  "mw "};
  for (const auto& ns : bad) expectRejected("namespace", ns, {"'" + ns + "'"});
  expectAccepted("namespace", "a");
  expectAccepted("namespace", std::string(64, 'n'));
  expectAccepted("namespace", "Az09._:-");
}

TEST_F(ConfigBadInput, LogLevel) {
  for (std::string v : {"", "verbose", "trace", "warning", "warn ", " warn", "3", "-1", "off\n", "in fo"}) {
    expectRejected("log_level", v, {"'" + v + "'"});
  }
  for (const char* v : {"off", "error", "warn", "info", "debug"}) expectAccepted("log_level", v);
}

TEST_F(ConfigBadInput, BindAddress) {
  expectRejected("bind_address", std::string(256, 'b'));
  expectRejected("bind_address", std::string(10000, 'b'));
  // Not an IP address or a host name.
  expectRejected("bind_address", "bad host", {"'bad host'"});
  expectRejected("bind_address", "bad\nhost", {"'bad\nhost'"});
  expectAccepted("bind_address", "127.0.0.1");
  expectAccepted("bind_address", "localhost");
}

TEST_F(ConfigBadInput, DataAddresses) {
  expectRejected("data_addresses", std::string(256, 'b'));
  expectRejected("data_addresses", "10.0.0.1,bad host", {"'bad host'"});
  expectRejected("data_addresses", "10.0.0.1,", {"''"});
  expectRejected("data_addresses", ",10.0.0.1", {"''"});
  expectRejected("data_addresses", "10.0.0.1,,10.0.0.2", {"''"});
  expectRejected("data_addresses", "10.0.0.1,10.0.0.1", {"'10.0.0.1'", "twice"});
  std::string seventeen;
  for (int i = 0; i < 17; ++i) seventeen += (i ? ",10.0.0." : "10.0.0.") + std::to_string(i + 1);
  expectRejected("data_addresses", seventeen, {"16"});
  expectAccepted("data_addresses", "127.0.0.1");
  expectAccepted("data_addresses", "127.0.0.1,::1,localhost");
  expectAccepted("data_addresses", "");  // back to the default
}

TEST_F(ConfigBadInput, SameHostPath) {
  for (std::string v : {"", "on", "OFF", "Auto", "off ", "auto\n", "1"}) {
    expectRejected("same_host_path", v, {"'" + v + "'", "auto or off"});
  }
  expectAccepted("same_host_path", "auto");
  expectAccepted("same_host_path", "off");
}

TEST_F(ConfigBadInput, SameHostMinBytes) {
  for (std::string v : {"", "0", "-1", "64k", "1099511627777", "12 "}) {
    expectRejected("same_host_min_bytes", v, {"'" + v + "'", "[1, 1099511627776]"});
  }
  expectAccepted("same_host_min_bytes", "1");
  expectAccepted("same_host_min_bytes", "65536");
}

TEST(ConfigEnvironment, SameHostPathFromTheEnvironmentIsCheckedAsTheKeyIs) {
  const char* old = std::getenv("MW_SAME_HOST_PATH");
  const std::string saved = old ? old : "";
  mw_config_t* cfg = nullptr;
  setenv("MW_SAME_HOST_PATH", "off", 1);
  EXPECT_EQ(mw_config_new(&cfg), MW_OK) << mw_last_error();
  mw_config_free(cfg);
  cfg = nullptr;
  setenv("MW_SAME_HOST_PATH", "sometimes", 1);
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_config_new(&cfg), "MW_SAME_HOST_PATH: 'sometimes' must be auto or off");
  EXPECT_EQ(cfg, nullptr);
  setenv("MW_SAME_HOST_PATH", "auto", 1);
  EXPECT_EQ(mw_config_new(&cfg), MW_OK) << mw_last_error();
  mw_config_free(cfg);
  if (old) {
    setenv("MW_SAME_HOST_PATH", saved.c_str(), 1);
  } else {
    unsetenv("MW_SAME_HOST_PATH");
  }
}

// ---- contexts ----------------------------------------------------------------

TEST(ContextBadInput, UnreachableRedisFailsQuicklyWithStore) {
  mwlab::TempDir dir("mw-badinput-");
  const std::string missing_sock = dir.path() + "/nobody.sock";
  for (const std::string& url : {"unix://" + missing_sock, std::string("redis://127.0.0.1:1")}) {
    SCOPED_TRACE(url);
    mw_config_t* cfg = newConfig({{"redis_url", url}, {"store_timeout_ms", "1000"}});
    mw_context_t* ctx = sentinelContext();
    auto t0 = Clock::now();
    const std::string where = url.rfind("unix://", 0) == 0 ? missing_sock : std::string("127.0.0.1");
    EXPECT_MW_FAIL(MW_ERR_STORE, mw_context_new(cfg, &ctx), where);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(ctx, nullptr);
    if (ctx != sentinelContext()) mw_context_free(ctx);
    mw_config_free(cfg);
  }
}

TEST(ContextBadInput, StoppedRedisFailsWithStore) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  redis.stop();
  mw_config_t* cfg = newConfig({{"redis_url", url}, {"store_timeout_ms", "1000"}});
  mw_context_t* ctx = sentinelContext();
  auto t0 = Clock::now();
  EXPECT_MW_FAIL(MW_ERR_STORE, mw_context_new(cfg, &ctx), redis.socketPath());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(ctx, nullptr);
  if (ctx != sentinelContext()) mw_context_free(ctx);
  mw_config_free(cfg);
}

TEST(ContextBadInput, NullConfigMeansDefaultsFromEnvironment) {
  const char* old = std::getenv("MW_REDIS_URL");
  const std::string saved = old ? old : "";
  const std::string sock = "/tmp/mw-badinput-no-such-dir-" + std::to_string(getpid()) + "/none.sock";
  setenv("MW_REDIS_URL", ("unix://" + sock).c_str(), 1);
  mw_context_t* ctx = sentinelContext();
  auto t0 = Clock::now();
  EXPECT_MW_FAIL(MW_ERR_STORE, mw_context_new(nullptr, &ctx), sock);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(ctx, nullptr);
  if (ctx != sentinelContext()) mw_context_free(ctx);
  if (old) {
    setenv("MW_REDIS_URL", saved.c_str(), 1);
  } else {
    unsetenv("MW_REDIS_URL");
  }
}

TEST(ContextBadInput, InconsistentHeartbeatSettings) {
  // Each value is in range on its own; together they are not.
  mw_config_t* cfg = newConfig({{"redis_url", "unix:///tmp/mw-badinput-unused.sock"},
                                {"heartbeat_interval_ms", "1000"},
                                {"heartbeat_timeout_ms", "1500"}});
  mw_context_t* ctx = sentinelContext();
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_context_new(cfg, &ctx), "heartbeat_timeout_ms", "1500");
  EXPECT_EQ(ctx, nullptr);
  if (ctx != sentinelContext()) mw_context_free(ctx);
  mw_config_free(cfg);
}

TEST(ContextBadInput, DataAddressOnNoInterfaceFailsTheUcxWorldNamingIt) {
  mwtest::RedisServer redis;
  // 192.0.2.0/24 is TEST-NET-1: on no interface of a test machine.
  mw_context_t* ctx = mwtest::newContext(redis.url(), {{"data_addresses", "127.0.0.1,192.0.2.77"}});
  ASSERT_NE(ctx, nullptr);
  mw_world_t* w = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_world_create(ctx, "paths", 0, 1, MW_BACKEND_UCX, 0, 10000, &w),
                 "data_addresses", "'192.0.2.77'");
  EXPECT_EQ(w, nullptr);
  if (w && w != sentinelWorld()) mw_world_destroy(w);
  mw_context_free(ctx);
}

// ---- worlds and operations on a real Redis -----------------------------------

class WorldBadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    redis_ = new mwtest::RedisServer();
    ctx_ = mwtest::newContext(redis_->url());
    if (ctx_) {
      if (mw_world_create(ctx_, "solo", 0, 1, mwtest::hostBackend(), 0, 30000, &solo_) != MW_OK) {
        std::fprintf(stderr, "creating world 'solo': %s\n", mw_last_error());
        solo_ = nullptr;
      }
    }
  }
  static void TearDownTestSuite() {
    if (solo_) mw_world_destroy(solo_);
    solo_ = nullptr;
    mw_context_free(ctx_);
    ctx_ = nullptr;
    delete redis_;
    redis_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(ctx_, nullptr) << "no context on the test's redis-server";
    ASSERT_NE(solo_, nullptr) << "no size-1 world";
  }
  void TearDown() override {
    // Bad input never hurts the world it was aimed at.
    if (solo_) {
      EXPECT_EQ(mw_world_state(solo_), MW_WORLD_READY);
    }
  }

  static mwtest::RedisServer* redis_;
  static mw_context_t* ctx_;
  static mw_world_t* solo_;
};

mwtest::RedisServer* WorldBadInput::redis_ = nullptr;
mw_context_t* WorldBadInput::ctx_ = nullptr;
mw_world_t* WorldBadInput::solo_ = nullptr;

TEST_F(WorldBadInput, CreateNullArguments) {
  mw_world_t* w = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                 mw_world_create(nullptr, "n1", 0, 1, mwtest::hostBackend(), 0, 1000, &w), "ctx", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                 mw_world_create(ctx_, nullptr, 0, 1, mwtest::hostBackend(), 0, 1000, &w), "name", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                 mw_world_create(ctx_, "n1", 0, 1, mwtest::hostBackend(), 0, 1000, nullptr), "out", "NULL");
}

TEST_F(WorldBadInput, CreateBadNames) {
  const std::vector<std::string> bad = {"",          std::string(129, 'w'), std::string(1000, 'w'),
                                        "a b",       "a/b",                 "{w}",
                                        "w{tag}",    "w\n",                 "\nw",
                                        "w\t",       "w\xc3\xa9",           "\xe4\xb8\x96\xe7\x95\x8c",
                                        "w*",        "w@x",                 "w,x",
                                        " w",        "w "};
  for (const auto& name : bad) {
    SCOPED_TRACE("name '" + printable(name) + "'");
    mw_world_t* w = sentinelWorld();
    // The message names the world; a very long name may be shortened.
    const std::string needle = name.empty() ? "name ''" : "'" + name.substr(0, 129);
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 1000, &w), needle);
    EXPECT_EQ(w, nullptr);
    if (w && w != sentinelWorld()) mw_world_destroy(w);
  }
}

TEST_F(WorldBadInput, LongestAndOddButValidNames) {
  for (std::string name : {std::string(127, 'x') + "1", std::string("A.z_0:9-"), std::string("-"),
                           std::string(":")}) {
    SCOPED_TRACE(name);
    mw_world_t* w = nullptr;
    EXPECT_MW_OK(mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 30000, &w));
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(std::string(mw_world_name(w)), name);
    EXPECT_EQ(mw_world_rank(w), 0);
    EXPECT_EQ(mw_world_size(w), 1);
    EXPECT_EQ(mw_world_state(w), MW_WORLD_READY);
    EXPECT_GE(mw_world_epoch(w), 1u);
    EXPECT_MW_OK(mw_world_destroy(w));
  }
}

TEST_F(WorldBadInput, CreateBadRanksAndSizes) {
  struct Case {
    int rank, size;
    long long named;  // the value the message must name
  };
  const Case cases[] = {{-1, 1, -1},           {1, 1, 1},           {INT_MAX, 1, INT_MAX},
                        {INT_MIN, 1, INT_MIN}, {2, 2, 2},           {5, 2, 5},
                        {-1, 2, -1},           {INT_MAX, INT_MAX, INT_MAX},
                        {0, 0, 0},             {0, -1, -1},         {0, INT_MIN, INT_MIN},
                        {-1, -1, -1},          {1, 0, 0}};
  for (const auto& c : cases) {
    SCOPED_TRACE("rank " + num(c.rank) + " size " + num(c.size));
    mw_world_t* w = sentinelWorld();
    const std::string name = uniqueName("rs");
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, name.c_str(), c.rank, c.size, mwtest::hostBackend(), 0, 1000, &w),
                   num(c.named));
    EXPECT_EQ(w, nullptr);
    if (w && w != sentinelWorld()) mw_world_destroy(w);
  }
}

TEST_F(WorldBadInput, SizeAboveMaxWorldSizeIsRejectedBeforeRedis) {
  for (int size : {65537, INT_MAX}) {
    mw_world_t* w = sentinelWorld();
    auto t0 = Clock::now();
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, uniqueName("huge").c_str(), 0, size, mwtest::hostBackend(), 0, 20000, &w),
                   num(size), "max_world_size 65536");
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
    EXPECT_EQ(w, nullptr);
  }
}

TEST_F(WorldBadInput, HugeSizeUnderARaisedLimitTimesOutWithoutHarm) {
  // A huge size the config allows is not an argument error: nobody else joins.
  mw_context_t* ctx = mwtest::newContext(redis_->url(), {{"max_world_size", num(INT_MAX)}});
  ASSERT_NE(ctx, nullptr);
  mw_world_t* w = sentinelWorld();
  const std::string name = uniqueName("huge");
  auto t0 = Clock::now();
  EXPECT_MW_FAIL(MW_ERR_TIMEOUT,
                 mw_world_create(ctx, name.c_str(), 0, INT_MAX, mwtest::hostBackend(), 0, 200, &w), name);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(w, nullptr);
  w = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_TIMEOUT,
                 mw_world_create(ctx, uniqueName("huge").c_str(), INT_MAX - 1, INT_MAX, mwtest::hostBackend(), 0, 0, &w),
                 "huge");
  EXPECT_EQ(w, nullptr);
  mw_context_free(ctx);
}

TEST_F(WorldBadInput, CreateBadTimeouts) {
  for (int t : {-2, -1000, INT_MIN}) {
    mw_world_t* w = sentinelWorld();
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, uniqueName("to").c_str(), 0, 1, mwtest::hostBackend(), 0, t, &w),
                   "timeout_ms", num(t));
    EXPECT_EQ(w, nullptr);
  }
}

TEST_F(WorldBadInput, CreateBadBackends) {
  for (int b : {0, 4, -1}) {
    mw_world_t* w = sentinelWorld();
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, uniqueName("be").c_str(), 0, 1, backendValue(b), 0, 1000, &w),
                   "backend", num(b));
    EXPECT_EQ(w, nullptr);
  }
}

TEST_F(WorldBadInput, HostBackendsIgnoreDevice) {
  for (int device : {-1, INT_MAX, INT_MIN}) {
    mw_world_t* w = nullptr;
    EXPECT_MW_OK(mw_world_create(ctx_, uniqueName("dev").c_str(), 0, 1, mwtest::hostBackend(), device, 30000, &w));
    EXPECT_MW_OK(mw_world_destroy(w));
  }
}

TEST_F(WorldBadInput, SameNameAndRankTwiceInOneContext) {
  const std::string name = uniqueName("dup");
  mw_world_t* first = nullptr;
  ASSERT_EQ(mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 30000, &first), MW_OK)
      << lastErrorText();
  const uint64_t epoch = mw_world_epoch(first);
  EXPECT_GE(epoch, 1u);

  mw_world_t* second = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_ALREADY_EXISTS,
                 mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 1000, &second), name);
  EXPECT_EQ(second, nullptr);
  // Same rank with another size is still the same claim.
  second = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_ALREADY_EXISTS,
                 mw_world_create(ctx_, name.c_str(), 0, 2, mwtest::hostBackend(), 0, 200, &second), name);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(mw_world_state(first), MW_WORLD_READY);

  EXPECT_MW_OK(mw_world_destroy(first));
  mw_world_t* again = nullptr;
  EXPECT_MW_OK(mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 30000, &again));
  ASSERT_NE(again, nullptr);
  EXPECT_GT(mw_world_epoch(again), epoch);
  EXPECT_EQ(mw_world_state(again), MW_WORLD_READY);
  EXPECT_MW_OK(mw_world_destroy(again));
}

TEST_F(WorldBadInput, SameNameAndRankClaimedByAnotherLiveContext) {
  const std::string name = uniqueName("claim");
  mw_world_t* first = nullptr;
  ASSERT_EQ(mw_world_create(ctx_, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 30000, &first), MW_OK)
      << lastErrorText();
  mw_context_t* other = mwtest::newContext(redis_->url());
  ASSERT_NE(other, nullptr);
  mw_world_t* second = sentinelWorld();
  EXPECT_MW_FAIL(MW_ERR_ALREADY_EXISTS,
                 mw_world_create(other, name.c_str(), 0, 1, mwtest::hostBackend(), 0, 2000, &second), name);
  if (second && second != sentinelWorld()) mw_world_destroy(second);
  mw_context_free(other);
  EXPECT_MW_OK(mw_world_destroy(first));
}

TEST_F(WorldBadInput, OperationsNullRequestOut) {
  Buffers b;
  for (const auto& op : ops()) {
    SCOPED_TRACE(op.name);
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(solo_, b.send, b.recv, 1, MW_FLOAT32, MW_SUM, 0, nullptr),
                   "req", "NULL");
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(solo_, nullptr, nullptr, 0, MW_FLOAT32, MW_SUM, 0, nullptr),
                   "req", "NULL");
  }
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_barrier_async(solo_, nullptr), "req", "NULL");
}

TEST_F(WorldBadInput, OperationsBadDtype) {
  Buffers b;
  for (const auto& op : ops()) {
    for (int dt : {-1, 10, 11, 1000, INT_MIN, INT_MAX}) {
      for (size_t count : {size_t{0}, size_t{1}}) {
        SCOPED_TRACE(std::string(op.name) + " dtype " + num(dt) + " count " + unum(count));
        mw_request_t* req = sentinelRequest();
        EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                       op.issue(solo_, b.send, b.recv, count, dt, MW_SUM, 0, &req), "dtype", num(dt));
        EXPECT_EQ(req, nullptr);
      }
    }
  }
}

TEST_F(WorldBadInput, ReductionsBadRedop) {
  Buffers b;
  for (const auto& op : ops()) {
    if (!op.reduces) continue;
    for (int r : {-1, 5, 6, 1000, INT_MIN, INT_MAX}) {
      for (size_t count : {size_t{0}, size_t{1}}) {
        SCOPED_TRACE(std::string(op.name) + " redop " + num(r) + " count " + unum(count));
        mw_request_t* req = sentinelRequest();
        EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                       op.issue(solo_, b.send, b.recv, count, MW_FLOAT32, r, 0, &req), "redop", num(r));
        EXPECT_EQ(req, nullptr);
      }
    }
  }
}

TEST_F(WorldBadInput, OperationsPeerOutOfRange) {
  Buffers b;
  for (const auto& op : ops()) {
    if (op.role == Role::None) continue;
    for (int peer : {-1, 1, 2, INT_MAX, INT_MIN}) {
      for (size_t count : {size_t{0}, size_t{1}}) {
        SCOPED_TRACE(std::string(op.name) + " peer " + num(peer) + " count " + unum(count));
        mw_request_t* req = sentinelRequest();
        EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                       op.issue(solo_, b.send, b.recv, count, MW_FLOAT32, MW_SUM, peer, &req), roleName(op.role),
                       num(peer));
        EXPECT_EQ(req, nullptr);
      }
    }
  }
}

TEST_F(WorldBadInput, OperationsCountOverflow) {
  Buffers b;
  const struct {
    size_t count;
    mw_dtype_t dt;
  } cases[] = {{SIZE_MAX, MW_FLOAT64},     {SIZE_MAX / 8 + 1, MW_FLOAT64}, {SIZE_MAX / 2, MW_FLOAT64},
               {SIZE_MAX / 2, MW_FLOAT16}, {SIZE_MAX / 4 + 1, MW_INT32},   {SIZE_MAX, MW_UINT8},
               {SIZE_MAX / 2 + 1, MW_INT8}};
  for (const auto& op : ops()) {
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(op.name) + " count " + unum(c.count) + " dtype " + num(c.dt));
      mw_request_t* req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(solo_, b.send, b.recv, c.count, c.dt, MW_SUM, 0, &req),
                     unum(c.count));
      EXPECT_EQ(req, nullptr);
      // Also with NULL buffers: the size is what is wrong.
      req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, op.issue(solo_, nullptr, nullptr, c.count, c.dt, MW_SUM, 0, &req),
                     unum(c.count));
      EXPECT_EQ(req, nullptr);
    }
  }
}

TEST_F(WorldBadInput, OperationsNullBufferWithCount) {
  Buffers b;
  for (const auto& op : ops()) {
    for (size_t count : {size_t{1}, size_t{3}}) {
      SCOPED_TRACE(std::string(op.name) + " count " + unum(count));
      if (op.uses_send) {
        mw_request_t* req = sentinelRequest();
        std::vector<std::string> needles = {"NULL", unum(count)};
        if (op.uses_recv) needles.push_back("sendbuf");
        primeLastError();
        mw_status_t s = op.issue(solo_, nullptr, b.recv, count, MW_FLOAT32, MW_SUM, 0, &req);
        EXPECT_TRUE(failsWith("NULL sendbuf", s, MW_ERR_INVALID_ARGUMENT, lastErrorText(), needles));
        EXPECT_EQ(req, nullptr);
      }
      if (op.uses_recv) {
        mw_request_t* req = sentinelRequest();
        std::vector<std::string> needles = {"NULL", unum(count)};
        if (op.uses_send) needles.push_back("recvbuf");
        primeLastError();
        mw_status_t s = op.issue(solo_, b.send, nullptr, count, MW_FLOAT32, MW_SUM, 0, &req);
        EXPECT_TRUE(failsWith("NULL recvbuf", s, MW_ERR_INVALID_ARGUMENT, lastErrorText(), needles));
        EXPECT_EQ(req, nullptr);
      }
      mw_request_t* req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                     op.issue(solo_, nullptr, nullptr, count, MW_FLOAT32, MW_SUM, 0, &req), "NULL");
      EXPECT_EQ(req, nullptr);
    }
  }
}

TEST_F(WorldBadInput, ZeroCountWithNullBuffersCompletes) {
  for (const auto& op : ops()) {
    if (op.role == Role::Dst || op.role == Role::Src) continue;  // paired below
    SCOPED_TRACE(op.name);
    mw_request_t* req = nullptr;
    EXPECT_MW_OK(op.issue(solo_, nullptr, nullptr, 0, MW_FLOAT32, MW_SUM, 0, &req));
    ASSERT_NE(req, nullptr);
    EXPECT_EQ(mwtest::waitAndFree(req), MW_OK) << lastErrorText();
  }
  // To self, send first and recv first.
  for (bool send_first : {true, false}) {
    SCOPED_TRACE(send_first ? "send then recv" : "recv then send");
    mw_request_t* s = nullptr;
    mw_request_t* r = nullptr;
    if (send_first) {
      EXPECT_MW_OK(mw_send_async(solo_, nullptr, 0, MW_FLOAT64, 0, &s));
      EXPECT_MW_OK(mw_recv_async(solo_, nullptr, 0, MW_FLOAT64, 0, &r));
    } else {
      EXPECT_MW_OK(mw_recv_async(solo_, nullptr, 0, MW_FLOAT64, 0, &r));
      EXPECT_MW_OK(mw_send_async(solo_, nullptr, 0, MW_FLOAT64, 0, &s));
    }
    ASSERT_NE(s, nullptr);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(mwtest::waitAndFree(s, 10000), MW_OK) << lastErrorText();
    EXPECT_EQ(mwtest::waitAndFree(r, 10000), MW_OK) << lastErrorText();
  }
  mw_request_t* req = nullptr;
  EXPECT_MW_OK(mw_barrier_async(solo_, &req));
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(mwtest::waitAndFree(req), MW_OK) << lastErrorText();
}

TEST_F(WorldBadInput, WorldStillWorksAfterBadInput) {
  float in[3] = {1.5f, -2.0f, 4.0f};
  float out[3] = {0, 0, 0};
  mw_request_t* req = nullptr;
  ASSERT_EQ(mw_allreduce_async(solo_, in, out, 3, MW_FLOAT32, MW_SUM, &req), MW_OK) << lastErrorText();
  EXPECT_EQ(mwtest::waitAndFree(req), MW_OK) << lastErrorText();
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 4.0f);
}

TEST_F(WorldBadInput, WaitAndTestBadArguments) {
  mw_request_t* req = nullptr;
  ASSERT_EQ(mw_barrier_async(solo_, &req), MW_OK) << lastErrorText();
  for (int t : {-2, -3, -1000, INT_MIN}) {
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_wait(req, t), "timeout_ms", num(t));
  }
  EXPECT_EQ(mw_wait(req, 10000), MW_OK) << lastErrorText();
  EXPECT_EQ(mw_test(req), MW_OK);
  EXPECT_EQ(mw_wait(req, 0), MW_OK);
  mw_request_set_user_data(req, UINT64_MAX);
  EXPECT_EQ(mw_request_user_data(req), UINT64_MAX);
  mw_request_free(req);
}

TEST_F(WorldBadInput, PollBadArguments) {
  mw_context_t* ctx = mwtest::newContext(redis_->url());
  ASSERT_NE(ctx, nullptr);
  mw_world_t* w = nullptr;
  ASSERT_EQ(mw_world_create(ctx, "poll", 0, 1, mwtest::hostBackend(), 0, 30000, &w), MW_OK) << lastErrorText();

  size_t n = 99;
  mw_completion_t c[4];
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(ctx, nullptr, 1, 0, &n), "out", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(ctx, nullptr, SIZE_MAX, 0, &n), "out", "NULL");
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(ctx, c, 4, 0, nullptr), "n_out", "NULL");
  for (int t : {-2, -1000, INT_MIN}) {
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_poll(ctx, c, 4, t, &n), "timeout_ms", num(t));
  }
  n = 99;
  EXPECT_MW_OK(mw_poll(ctx, nullptr, 0, 0, &n));
  EXPECT_EQ(n, 0u);

  // A pending completion is neither consumed nor lost by max = 0.
  mw_request_t* req = nullptr;
  ASSERT_EQ(mw_barrier_async(w, &req), MW_OK) << lastErrorText();
  mw_request_set_user_data(req, 1234);
  n = 99;
  EXPECT_MW_OK(mw_poll(ctx, nullptr, 0, 0, &n));
  EXPECT_EQ(n, 0u);
  n = 0;
  EXPECT_MW_OK(mw_poll(ctx, c, 4, 10000, &n));
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(c[0].request, req);
  EXPECT_EQ(c[0].world, w);
  EXPECT_EQ(c[0].user_data, 1234u);
  EXPECT_EQ(c[0].status, MW_OK);
  mw_request_free(req);

  EXPECT_MW_OK(mw_world_destroy(w));
  mw_context_free(ctx);
}

TEST_F(WorldBadInput, NextEventBadArguments) {
  mw_context_t* ctx = mwtest::newContext(redis_->url());
  ASSERT_NE(ctx, nullptr);
  mw_event_t e;
  EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_next_event(ctx, nullptr, 0), "out", "NULL");
  for (int t : {-2, -1000, INT_MIN}) {
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_next_event(ctx, &e, t), "timeout_ms", num(t));
  }
  EXPECT_MW_FAIL(MW_ERR_TIMEOUT, mw_next_event(ctx, &e, 0), "0");
  mw_context_free(ctx);
}

// ---- a world of two, formed by two contexts on two threads -------------------

TEST(WorldOfTwoBadInput, SizesRootsAndNonRootBuffers) {
  mwtest::RedisServer redis;
  mw_context_t* ctx[2] = {mwtest::newContext(redis.url()), mwtest::newContext(redis.url())};
  ASSERT_NE(ctx[0], nullptr);
  ASSERT_NE(ctx[1], nullptr);

  auto member = [&](int rank) {
    mw_world_t* w = nullptr;
    mw_status_t s = mw_world_create(ctx[rank], "pair", rank, 2, mwtest::hostBackend(), 0, 30000, &w);
    EXPECT_EQ(s, MW_OK) << "rank " << rank << ": " << lastErrorText();
    if (s != MW_OK) return;
    Buffers b;
    mw_request_t* req = sentinelRequest();

    // size * count overflows although count alone would fit.
    const size_t half = SIZE_MAX / 2;
    const size_t quarter_plus = SIZE_MAX / 4 + 1;
    for (size_t count : {half, quarter_plus}) {
      SCOPED_TRACE("rank " + num(rank) + " count " + unum(count));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_allgather_async(w, b.send, b.recv, count, MW_UINT8, &req),
                     unum(count));
      EXPECT_EQ(req, nullptr);
      req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_alltoall_async(w, b.send, b.recv, count, MW_UINT8, &req),
                     unum(count));
      EXPECT_EQ(req, nullptr);
      req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                     mw_reduce_scatter_async(w, b.send, b.recv, count, MW_UINT8, MW_SUM, &req), unum(count));
      EXPECT_EQ(req, nullptr);
      // At the root, gather's recvbuf and scatter's sendbuf hold size blocks.
      req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_gather_async(w, b.send, b.recv, count, MW_UINT8, rank, &req),
                     unum(count));
      EXPECT_EQ(req, nullptr);
      req = sentinelRequest();
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_scatter_async(w, b.send, b.recv, count, MW_UINT8, rank, &req),
                     unum(count));
      EXPECT_EQ(req, nullptr);
    }
    // Peers and roots: 2 == size is out of range.
    for (int peer : {2, -1, 3, INT_MAX}) {
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_send_async(w, b.send, 1, MW_INT32, peer, &req), "dst", num(peer));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_recv_async(w, b.recv, 1, MW_INT32, peer, &req), "src", num(peer));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_broadcast_async(w, b.recv, 1, MW_INT32, peer, &req), "root",
                     num(peer));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                     mw_reduce_async(w, b.send, b.recv, 1, MW_INT32, MW_SUM, peer, &req), "root", num(peer));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_gather_async(w, b.send, b.recv, 1, MW_INT32, peer, &req),
                     "root", num(peer));
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_scatter_async(w, b.send, b.recv, 1, MW_INT32, peer, &req),
                     "root", num(peer));
    }
    // The root needs the buffer that the other rank may leave NULL.
    if (rank == 0) {
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_reduce_async(w, b.send, nullptr, 2, MW_INT32, MW_SUM, 0, &req),
                     "recvbuf", "NULL");
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_gather_async(w, b.send, nullptr, 2, MW_INT32, 0, &req),
                     "recvbuf", "NULL");
      EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT, mw_scatter_async(w, nullptr, b.recv, 2, MW_INT32, 0, &req),
                     "sendbuf", "NULL");
    }

    // Valid calls, with NULL where this rank's buffer is unused (root 0).
    int32_t mine[4] = {rank + 1, 10 * (rank + 1), 100, 1000};
    int32_t reduced[2] = {-1, -1};
    int32_t gathered[4] = {-1, -1, -1, -1};
    int32_t scattered[2] = {-1, -1};
    int32_t to_scatter[4] = {7, 8, 9, 10};
    mw_request_t* r[6] = {};
    EXPECT_MW_OK(mw_reduce_async(w, mine, rank == 0 ? reduced : nullptr, 2, MW_INT32, MW_SUM, 0, &r[0]));
    EXPECT_MW_OK(mw_gather_async(w, mine, rank == 0 ? gathered : nullptr, 2, MW_INT32, 0, &r[1]));
    EXPECT_MW_OK(mw_scatter_async(w, rank == 0 ? to_scatter : nullptr, scattered, 2, MW_INT32, 0, &r[2]));
    // Zero-count point-to-point with NULL buffers between the two ranks.
    if (rank == 0) {
      EXPECT_MW_OK(mw_send_async(w, nullptr, 0, MW_FLOAT32, 1, &r[3]));
      EXPECT_MW_OK(mw_recv_async(w, nullptr, 0, MW_FLOAT32, 1, &r[4]));
    } else {
      EXPECT_MW_OK(mw_recv_async(w, nullptr, 0, MW_FLOAT32, 0, &r[3]));
      EXPECT_MW_OK(mw_send_async(w, nullptr, 0, MW_FLOAT32, 0, &r[4]));
    }
    EXPECT_MW_OK(mw_barrier_async(w, &r[5]));
    for (int i = 0; i < 6; ++i) {
      if (!r[i]) continue;
      EXPECT_EQ(mwtest::waitAndFree(r[i], 30000), MW_OK) << "rank " << rank << " request " << i << ": "
                                                         << lastErrorText();
    }
    if (rank == 0) {
      EXPECT_EQ(reduced[0], 1 + 2);
      EXPECT_EQ(reduced[1], 10 + 20);
      EXPECT_EQ(gathered[0], 1);
      EXPECT_EQ(gathered[1], 10);
      EXPECT_EQ(gathered[2], 2);
      EXPECT_EQ(gathered[3], 20);
      EXPECT_EQ(scattered[0], 7);
      EXPECT_EQ(scattered[1], 8);
    } else {
      EXPECT_EQ(scattered[0], 9);
      EXPECT_EQ(scattered[1], 10);
    }
    EXPECT_EQ(mw_world_state(w), MW_WORLD_READY);
    // Both ranks are done with the world before either destroys it.
    mw_request_t* last = nullptr;
    EXPECT_MW_OK(mw_barrier_async(w, &last));
    if (last) {
      EXPECT_EQ(mwtest::waitAndFree(last, 30000), MW_OK) << lastErrorText();
    }
    EXPECT_MW_OK(mw_world_destroy(w));
  };

  std::thread t1(member, 1);
  member(0);
  t1.join();
  mw_context_free(ctx[0]);
  mw_context_free(ctx[1]);
}

// ---- last, since a library that mishandles them aborts under UBSan ----------

// Backend values outside the enum's value range (a C caller may pass any
// int): still MW_ERR_INVALID_ARGUMENT, with no undefined behaviour.
class EnumRangeBadInput : public WorldBadInput {};

TEST_F(EnumRangeBadInput, CreateBackendOutsideEnumRange) {
  for (int b : {-1, 4, 1000, INT_MIN, INT_MAX}) {
    mw_world_t* w = sentinelWorld();
    EXPECT_MW_FAIL(MW_ERR_INVALID_ARGUMENT,
                   mw_world_create(ctx_, uniqueName("be").c_str(), 0, 1, backendValue(b), 0, 1000, &w),
                   "backend", num(b));
    EXPECT_EQ(w, nullptr);
  }
}

}  // namespace
