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
  // The local IP addresses this context's data plane publishes, in order
  // of preference: one path each. Empty: bind_address, else every
  // non-loopback interface that is up.
  std::vector<std::string> data_addresses;
  // A message to a peer that makes no progress this long puts the path it
  // uses in doubt: the peer's heartbeat then tells a path fault from a
  // member fault.
  std::chrono::milliseconds path_timeout{100};
  // Off: one path carries a world's data even where several are published
  // (no acknowledgements, no failover).
  bool path_failover = true;
  // Whether members on one host may talk over a path of their own (auto:
  // messages of same_host_min_bytes and more by cross-memory attach,
  // core/same_host/cma.h) or keep to TCP, the path every cross-host pair
  // takes (off). A context with two or more data addresses never takes it.
  bool same_host_path = true;
  size_t same_host_min_bytes = 64 << 10;
  LogLevel log_level = LogLevel::Warn;
  std::chrono::milliseconds store_timeout{2000};
  // How long a wait that drives the progress engine itself spins before it
  // sleeps (the hybrid wait of MPI and UCX); 0: never spin.
  std::chrono::microseconds spin{20};
  // The largest world a create may ask for, checked before Redis is
  // touched: it bounds what one caller can make every member, and Redis,
  // hold for a world.
  int max_world_size = 65536;
  // Counters and histograms of this context (core/metrics): kept at all,
  // with a `world` label on the per-world series, published to Redis this
  // often for `multiworld metrics` (0: never), and served over HTTP on
  // host:port (empty: not).
  bool metrics = true;
  bool metrics_world_labels = false;
  std::chrono::milliseconds metrics_publish{10000};
  std::string metrics_listen;

  // Defaults, with redis_url, bind_address, data_addresses,
  // same_host_path and same_host_min_bytes taken from MW_REDIS_URL,
  // MW_BIND_ADDRESS, MW_DATA_ADDRESSES, MW_SAME_HOST_PATH and
  // MW_SAME_HOST_MIN_BYTES when set.
  static Config fromEnvironment();

  // Throws Error(InvalidArgument) naming the key or the value.
  void set(const std::string& key, const std::string& value);

  // Cross-key checks done once, when a context is made from this config.
  void validate() const;

  // Every key set() takes, in README's order.
  static const std::vector<std::string>& keys();

  // data_addresses when set, else bind_address as a list of one, else
  // empty (the transport finds this host's interfaces).
  std::vector<std::string> configuredDataAddresses() const;
};

bool isValidName(const std::string& name, size_t max_len);

}  // namespace mw
