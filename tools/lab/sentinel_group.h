// A Redis Sentinel deployment for failover tests and the soak: a master, one replica
// and three sentinels, each a real redis-server / redis-sentinel process
// on a loopback TCP port picked at start, with short failure-detection
// settings so a failover takes a few seconds.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace mwlab {

class SentinelGroup {
 public:
  struct Options {
    int down_after_ms = 1000;  // sentinel down-after-milliseconds
    int failover_timeout_ms = 3000;
    std::string password;  // requirepass of master and replica, when set
    // The address servers and sentinels are known by (they listen on it and
    // on 127.0.0.1): a lab whose clients sit in network namespaces names the
    // address those reach this host by.
    std::string host = "127.0.0.1";
  };
  static constexpr const char* kMasterName = "mwmaster";

  // Starts everything and returns once the replica is in sync and every
  // sentinel knows the replica and the two other sentinels (so a failover
  // can be authorized). Throws std::runtime_error otherwise.
  explicit SentinelGroup(Options opt);
  SentinelGroup() : SentinelGroup(Options()) {}
  ~SentinelGroup();
  SentinelGroup(const SentinelGroup&) = delete;
  SentinelGroup& operator=(const SentinelGroup&) = delete;

  // redis+sentinel://[:password@]127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/<master>[/db]
  std::string url(const std::string& master = kMasterName, int db = 0, bool with_password = true) const;
  const Options& options() const { return opt_; }
  std::vector<int> sentinelPorts() const;

  // The port of the server that the first sentinel names as master.
  int masterPort() const;
  // The process of the server that the first sentinel names as master, -1
  // when none answers (a caller pauses it with SIGSTOP/SIGCONT).
  pid_t masterPid() const;
  // kill -9 the current master; returns its port.
  int killMaster();
  // Starts the server killed last again, on its port, as a replica of the
  // current master, and returns once it is in sync and every sentinel counts
  // it as the master's replica again (so that the next failover can be
  // authorized). Throws std::runtime_error after `limit`.
  void restartKilled(std::chrono::milliseconds limit);
  // Waits until a sentinel names a master other than `old_port` and that
  // server says it is one; false after `limit`.
  bool waitForNewMaster(int old_port, std::chrono::milliseconds limit) const;

 private:
  struct Proc {
    pid_t pid = -1;
    int port = 0;
  };
  Proc spawn(const std::vector<std::string>& argv, int port);
  Proc startServer(int port, int replica_of);
  void waitForReplicas(std::chrono::milliseconds limit);
  void stop(Proc& p);
  void waitUntil(const char* what, std::chrono::milliseconds limit, const std::function<bool()>& ready);

  Options opt_;
  std::string dir_;
  Proc servers_[2];  // started as master, replica
  Proc sentinels_[3];
  int killed_port_ = 0;  // of the server killMaster() stopped, 0 = none
};

}  // namespace mwlab
