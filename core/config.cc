#include "core/config.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "core/error.h"
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

const std::vector<std::string>& Config::keys() {
  static const std::vector<std::string> k = {
      "redis_url",     "namespace",    "heartbeat_interval_ms", "heartbeat_timeout_ms",
      "op_timeout_ms", "bind_address", "log_level",             "store_timeout_ms",
      "spin_us",       "max_world_size", "data_addresses",        "path_timeout_ms",
      "path_failover", "same_host_path", "same_host_min_bytes"};
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
  if (key == "redis_url") {
    parseRedisUrl(value);  // throws on a bad URL
    redis_url = value;
  } else if (key == "namespace") {
    if (!isValidName(value, 64)) {
      throw Error(Status::InvalidArgument,
                  "config namespace: '" + value + "' must be 1..64 chars of [A-Za-z0-9._:-]");
    }
    ns = value;
  } else if (key == "heartbeat_interval_ms") {
    heartbeat_interval = parseMillis(key, value, 10, 60000);
  } else if (key == "heartbeat_timeout_ms") {
    heartbeat_timeout = parseMillis(key, value, 20, 3600000);
  } else if (key == "op_timeout_ms") {
    op_timeout = parseMillis(key, value, 0, kDay);
  } else if (key == "bind_address") {
    bind_address = value.empty() ? value : checkedHost(key, value);
  } else if (key == "data_addresses") {
    data_addresses = value.empty() ? std::vector<std::string>{} : parseAddressList(key, value);
  } else if (key == "path_timeout_ms") {
    path_timeout = parseMillis(key, value, 1, 3600000);
  } else if (key == "path_failover") {
    if (value != "on" && value != "off") {
      throw Error(Status::InvalidArgument, "config path_failover: '" + value + "' must be on or off");
    }
    path_failover = value == "on";
  } else if (key == "same_host_path") {
    same_host_path = parseSameHostPath("config same_host_path", value);
  } else if (key == "same_host_min_bytes") {
    same_host_min_bytes = static_cast<size_t>(parseInteger(key, value, 1, 1ll << 40));
  } else if (key == "log_level") {
    log_level = parseLogLevel(value);
  } else if (key == "store_timeout_ms") {
    store_timeout = parseMillis(key, value, 10, 600000);
  } else if (key == "spin_us") {
    spin = std::chrono::microseconds(parseInteger(key, value, 0, 1000000));
  } else if (key == "max_world_size") {
    max_world_size = static_cast<int>(parseInteger(key, value, 1, std::numeric_limits<int>::max()));
  } else {
    std::string known;
    for (const auto& k : keys()) known += (known.empty() ? "" : ", ") + k;
    throw Error(Status::InvalidArgument, "config: unknown key '" + key + "' (known: " + known + ")");
  }
}

std::vector<std::string> Config::configuredDataAddresses() const {
  if (!data_addresses.empty()) return data_addresses;
  if (!bind_address.empty()) return {bind_address};
  return {};
}

void Config::validate() const {
  if (heartbeat_timeout < 2 * heartbeat_interval) {
    throw Error(Status::InvalidArgument,
                "config: heartbeat_timeout_ms (" + std::to_string(heartbeat_timeout.count()) +
                    ") must be at least twice heartbeat_interval_ms (" +
                    std::to_string(heartbeat_interval.count()) + ")");
  }
}

}  // namespace mw
