// Settings of one context, set from string keys (librdkafka style).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace mw {

enum class LogLevel { Off, Error, Warn, Info, Debug };

struct Config {
  std::string redis_url;
  std::string ns = "mw";
  std::chrono::milliseconds heartbeat_interval{100};
  std::chrono::milliseconds heartbeat_timeout{1000};
  std::chrono::milliseconds op_timeout{0};  // 0: no limit
  std::string bind_address;
  LogLevel log_level = LogLevel::Warn;
  std::chrono::milliseconds store_timeout{2000};
  // How long a wait that drives the progress engine itself spins before it
  // sleeps (the hybrid wait of MPI and UCX); 0: never spin.
  std::chrono::microseconds spin{20};
  // The largest world a create may ask for, checked before Redis is
  // touched: it bounds what one caller can make every member, and Redis,
  // hold for a world.
  int max_world_size = 65536;

  // Defaults, with redis_url and bind_address taken from MW_REDIS_URL and
  // MW_BIND_ADDRESS when set.
  static Config fromEnvironment();

  // Throws Error(InvalidArgument) naming the key or the value.
  void set(const std::string& key, const std::string& value);

  // Cross-key checks done once, when a context is made from this config.
  void validate() const;

  static const std::vector<std::string>& keys();
};

bool isValidName(const std::string& name, size_t max_len);

}  // namespace mw
