#include "core/config.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/error.h"
#include "core/metrics/listen_address.h"
#include "core/store/redis_url.h"

namespace mw {
namespace {

constexpr const char* kDefaultRedisUrl = "redis://127.0.0.1:6379";

long long parseInteger(const std::string& key, const std::string& value, long long min, long long max) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || errno != 0 || *end != '\0' || v < min || v > max) {
    throw Error(Status::InvalidArgument, "config " + key + ": '" + value +
                                             "' is not an integer in [" + std::to_string(min) +
                                             ", " + std::to_string(max) + "]");
  }
  return v;
}

std::chrono::milliseconds parseMillis(const std::string& key, const std::string& value, long long min,
                                      long long max) {
  return std::chrono::milliseconds(parseInteger(key, value, min, max));
}

LogLevel parseLogLevel(const std::string& value) {
  if (value == "off") return LogLevel::Off;
  if (value == "error") return LogLevel::Error;
  if (value == "warn") return LogLevel::Warn;
  if (value == "info") return LogLevel::Info;
  if (value == "debug") return LogLevel::Debug;
  throw Error(Status::InvalidArgument,
              "config log_level: '" + value + "' is not one of off, error, warn, info, debug");
}

constexpr long long kDay = 24LL * 3600 * 1000;

// Host names, IPv4 and IPv6 literals (with a %zone); resolution happens
// when the context creates its transport.
bool isValidHostText(const std::string& v) {
  for (char c : v) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == ':' || c == '%' || c == '_';
    if (!ok) return false;
  }
  return true;
}

constexpr size_t kMaxHostText = 255;
constexpr size_t kMaxDataAddresses = 16;

std::string checkedHost(const std::string& key, const std::string& value) {
  if (value.empty() || value.size() > kMaxHostText || !isValidHostText(value)) {
    throw Error(Status::InvalidArgument,
                "config " + key + ": '" + value.substr(0, 64) + "' is not an IP address or host name");
  }
  return value;
}

std::vector<std::string> parseAddressList(const std::string& key, const std::string& value) {
  std::vector<std::string> list;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (list.size() == kMaxDataAddresses) {
      throw Error(Status::InvalidArgument, "config " + key + ": more than " + std::to_string(kMaxDataAddresses) +
                                               " addresses");
    }
    list.push_back(checkedHost(key, item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (list[i] == list[j]) {
        throw Error(Status::InvalidArgument, "config " + key + ": '" + list[i] + "' is listed twice");
      }
    }
  }
  return list;
}

bool parseSameHostPath(const std::string& what, const std::string& value) {
  if (value == "off") return false;
  if (value == "auto") return true;
  throw Error(Status::InvalidArgument, what + ": '" + value + "' must be auto or off");
}

}  // namespace

bool isValidName(const std::string& name, size_t max_len) {
  if (name.empty() || name.size() > max_len) return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

bool parseOnOff(const std::string& key, const std::string& value) {
  if (value != "on" && value != "off") {
    throw Error(Status::InvalidArgument, "config " + key + ": '" + value + "' must be on or off");
  }
  return value == "on";
}

// Every key mw_config_set takes, in the order README's table lists them
// (tests/config_keys_test.cc checks the table, and the header's list,
// against this one).
struct KeySpec {
  const char* key;
  void (*set)(Config& c, const std::string& key, const std::string& value);
};

const KeySpec kKeys[] = {
    {"redis_url",
     [](Config& c, const std::string&, const std::string& v) {
       parseRedisUrl(v);  // throws on a bad URL
       c.redis_url = v;
     }},
    {"namespace",
     [](Config& c, const std::string&, const std::string& v) {
       if (!isValidName(v, 64)) {
         throw Error(Status::InvalidArgument, "config namespace: '" + v + "' must be 1..64 chars of [A-Za-z0-9._:-]");
       }
       c.ns = v;
     }},
    {"heartbeat_interval_ms",
     [](Config& c, const std::string& k, const std::string& v) { c.heartbeat_interval = parseMillis(k, v, 10, 60000); }},
    {"heartbeat_timeout_ms",
     [](Config& c, const std::string& k, const std::string& v) { c.heartbeat_timeout = parseMillis(k, v, 20, 3600000); }},
    {"op_timeout_ms",
     [](Config& c, const std::string& k, const std::string& v) { c.op_timeout = parseMillis(k, v, 0, kDay); }},
    {"bind_address",
     [](Config& c, const std::string& k, const std::string& v) { c.bind_address = v.empty() ? v : checkedHost(k, v); }},
    {"log_level", [](Config& c, const std::string&, const std::string& v) { c.log_level = parseLogLevel(v); }},
    {"store_timeout_ms",
     [](Config& c, const std::string& k, const std::string& v) { c.store_timeout = parseMillis(k, v, 10, 600000); }},
    {"spin_us",
     [](Config& c, const std::string& k, const std::string& v) {
       c.spin = std::chrono::microseconds(parseInteger(k, v, 0, 1000000));
     }},
    {"data_addresses",
     [](Config& c, const std::string& k, const std::string& v) {
       c.data_addresses = v.empty() ? std::vector<std::string>{} : parseAddressList(k, v);
     }},
    {"path_timeout_ms",
     [](Config& c, const std::string& k, const std::string& v) { c.path_timeout = parseMillis(k, v, 1, 3600000); }},
    {"path_failover", [](Config& c, const std::string& k, const std::string& v) { c.path_failover = parseOnOff(k, v); }},
    {"same_host_path",
     [](Config& c, const std::string&, const std::string& v) {
       c.same_host_path = parseSameHostPath("config same_host_path", v);
     }},
    {"same_host_min_bytes",
     [](Config& c, const std::string& k, const std::string& v) {
       c.same_host_min_bytes = static_cast<size_t>(parseInteger(k, v, 1, 1ll << 40));
     }},
    {"max_world_size",
     [](Config& c, const std::string& k, const std::string& v) {
       c.max_world_size = static_cast<int>(parseInteger(k, v, 1, std::numeric_limits<int>::max()));
     }},
    {"metrics", [](Config& c, const std::string& k, const std::string& v) { c.metrics = parseOnOff(k, v); }},
    {"metrics_world_labels",
     [](Config& c, const std::string& k, const std::string& v) { c.metrics_world_labels = parseOnOff(k, v); }},
    {"metrics_publish_ms",
     [](Config& c, const std::string& k, const std::string& v) {
       const auto ms = parseMillis(k, v, 0, 3600000);
       if (ms.count() != 0 && ms.count() < 100) {
         throw Error(Status::InvalidArgument, "config " + k + ": '" + v + "' must be 0 (off) or at least 100");
       }
       c.metrics_publish = ms;
     }},
    {"metrics_listen",
     [](Config& c, const std::string& k, const std::string& v) {
       if (!v.empty()) checkedHost(k, metrics::splitHostPort("config " + k, v).first);
       c.metrics_listen = v;
     }},
};

}  // namespace

const std::vector<std::string>& Config::keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> names;
    for (const KeySpec& spec : kKeys) names.emplace_back(spec.key);
    return names;
  }();
  return k;
}

Config Config::fromEnvironment() {
  Config c;
  const char* url = std::getenv("MW_REDIS_URL");
  c.redis_url = (url && *url) ? url : kDefaultRedisUrl;
  const char* bind = std::getenv("MW_BIND_ADDRESS");
  if (bind && *bind) c.bind_address = bind;
  const char* data = std::getenv("MW_DATA_ADDRESSES");
  if (data && *data) c.data_addresses = parseAddressList("MW_DATA_ADDRESSES", data);
  const char* same_host = std::getenv("MW_SAME_HOST_PATH");
  if (same_host && *same_host) c.same_host_path = parseSameHostPath("MW_SAME_HOST_PATH", same_host);
  const char* min_bytes = std::getenv("MW_SAME_HOST_MIN_BYTES");
  if (min_bytes && *min_bytes) {
    try {
      c.set("same_host_min_bytes", min_bytes);
    } catch (const Error& e) {
      throw Error(Status::InvalidArgument, std::string("MW_SAME_HOST_MIN_BYTES: ") + e.what());
    }
  }
  return c;
}

void Config::set(const std::string& key, const std::string& value) {
  for (const KeySpec& spec : kKeys) {
    if (key == spec.key) return spec.set(*this, key, value);
  }
  std::string known;
  for (const auto& k : keys()) known += (known.empty() ? "" : ", ") + k;
  throw Error(Status::InvalidArgument, "config: unknown key '" + key + "' (known: " + known + ")");
}

std::vector<std::string> Config::configuredDataAddresses() const {
  if (!data_addresses.empty()) return data_addresses;
  if (!bind_address.empty()) return {bind_address};
  return {};
}

void Config::validate() const {
  if (!metrics && !metrics_listen.empty()) {
    throw Error(Status::InvalidArgument, "config: metrics_listen (" + metrics_listen + ") needs metrics on");
  }
  if (heartbeat_timeout < 2 * heartbeat_interval) {
    throw Error(Status::InvalidArgument,
                "config: heartbeat_timeout_ms (" + std::to_string(heartbeat_timeout.count()) +
                    ") must be at least twice heartbeat_interval_ms (" +
                    std::to_string(heartbeat_interval.count()) + ")");
  }
}

}  // namespace mw
