#include "tools/lab/sentinel_group.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <thread>

#include "tools/lab/ports.h"
#include "tools/lab/redis_client.h"

namespace mwlab {

namespace {

std::string field(const std::string& info, const std::string& name) {
  size_t at = info.find(name + ":");
  if (at == std::string::npos) return "";
  size_t end = info.find_first_of("\r\n", at);
  return info.substr(at + name.size() + 1, end - at - name.size() - 1);
}

}  // namespace

SentinelGroup::SentinelGroup(Options opt) : opt_(std::move(opt)) {
  char tmpl[] = "/tmp/mwtest-sentinel-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  try {
    servers_[0] = startServer(freeLoopbackPort(), 0);
    servers_[1] = startServer(freeLoopbackPort(), servers_[0].port);
    RedisClient replica(opt_.host, servers_[1].port, opt_.password, std::chrono::seconds(2));
    waitUntil("the replica to sync", std::chrono::seconds(10), [&] {
      return field(replica.text({"INFO", "replication"}), "master_link_status") == "up";
    });
    for (auto& s : sentinels_) {
      const int port = freeLoopbackPort();
      const std::string conf = dir_ + "/sentinel-" + std::to_string(port) + ".conf";
      std::ofstream out(conf);
      out << "port " << port << "\nbind 127.0.0.1" << (opt_.host == "127.0.0.1" ? "" : " " + opt_.host)
          << "\nprotected-mode " << (opt_.host == "127.0.0.1" ? "yes" : "no") << "\nsentinel announce-ip " << opt_.host << "\ndir " << dir_ << "\nlogfile " << dir_ << "/sentinel-" << port
          << ".log\nsentinel monitor " << kMasterName << " " << opt_.host << " " << servers_[0].port << " 2\n"
          << "sentinel down-after-milliseconds " << kMasterName << " " << opt_.down_after_ms << "\n"
          << "sentinel failover-timeout " << kMasterName << " " << opt_.failover_timeout_ms << "\n"
          << "sentinel parallel-syncs " << kMasterName << " 1\n";
      if (!opt_.password.empty()) out << "sentinel auth-pass " << kMasterName << " " << opt_.password << "\n";
      out.close();
      s = spawn({"redis-sentinel", conf}, port);
    }
    waitForReplicas(std::chrono::seconds(20));
  } catch (...) {
    for (auto& s : sentinels_) stop(s);
    for (auto& s : servers_) stop(s);
    throw;
  }
}

SentinelGroup::Proc SentinelGroup::startServer(int port, int replica_of) {
  // No delay before a diskless full sync: Redis's default waits 5 s for
  // more replicas to share it, and this group has one.
  std::vector<std::string> argv = {"redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--dir", dir_,
                                   "--dbfilename", "dump-" + std::to_string(port) + ".rdb",
                                   "--logfile", dir_ + "/redis-" + std::to_string(port) + ".log"};
  if (opt_.host != "127.0.0.1") {
    // Clients come from the lab's namespaces, not from loopback: without a
    // password Redis would refuse them. The address lives on a lab bridge.
    argv.insert(argv.begin() + 5, opt_.host);
    argv.insert(argv.end(), {"--protected-mode", "no"});
  }
  if (!opt_.password.empty()) argv.insert(argv.end(), {"--requirepass", opt_.password, "--masterauth", opt_.password});
  if (replica_of) {
    argv.insert(argv.end(), {"--replicaof", opt_.host, std::to_string(replica_of), "--replica-announce-ip", opt_.host});
  }
  return spawn(argv, port);
}

// Until every sentinel knows the master's replica and the two other
// sentinels: only then can a failover be authorized.
void SentinelGroup::waitForReplicas(std::chrono::milliseconds limit) {
  // A replica promoted before its first sync completes starts empty: every
  // key would be lost in the next failover, far beyond what asynchronous
  // replication loses.
  for (const auto& s : servers_) {
    if (s.pid <= 0) continue;
    RedisClient c(s.port, opt_.password);
    waitUntil("the replica to finish its sync", limit, [&] {
      const std::string info = c.text({"INFO", "replication"});
      return info.find("role:master") != std::string::npos ||
             info.find("master_link_status:up") != std::string::npos;
    });
  }
  for (const auto& s : sentinels_) {
    RedisClient c(s.port, "");
    waitUntil("every sentinel to know the replica and the other sentinels", limit, [&] {
      auto m = c.cmd({"SENTINEL", "master", kMasterName});
      if (!m || m->type != REDIS_REPLY_ARRAY) return false;
      std::string replicas, sentinels, flags;
      for (size_t i = 0; i + 1 < m->elements; i += 2) {
        std::string k(m->element[i]->str, m->element[i]->len);
        std::string v(m->element[i + 1]->str ? m->element[i + 1]->str : "", m->element[i + 1]->str ? m->element[i + 1]->len : 0);
        if (k == "num-slaves") replicas = v;
        if (k == "num-other-sentinels") sentinels = v;
      }
      if (replicas != "1" || sentinels != "2") return false;
      // A replica the sentinel still holds down (the old master before it
      // came back) cannot be promoted.
      auto r = c.cmd({"SENTINEL", "replicas", kMasterName});
      if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1) return false;
      const redisReply* rep = r->element[0];
      for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        if (std::string(rep->element[i]->str, rep->element[i]->len) == "flags") {
          flags = std::string(rep->element[i + 1]->str, rep->element[i + 1]->len);
        }
      }
      return flags == "slave";
    });
  }
}

SentinelGroup::~SentinelGroup() {
  for (auto& s : sentinels_) stop(s);
  for (auto& s : servers_) stop(s);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

SentinelGroup::Proc SentinelGroup::spawn(const std::vector<std::string>& args, int port) {
  Proc p;
  p.port = port;
  std::fflush(nullptr);
  p.pid = fork();
  if (p.pid < 0) throw std::runtime_error("fork failed");
  if (p.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  waitUntil(("'" + args[0] + "' to answer on port " + std::to_string(port)).c_str(), std::chrono::seconds(10), [&] {
    int status;
    if (waitpid(p.pid, &status, WNOHANG) == p.pid) {
      p.pid = -1;
      throw std::runtime_error(args[0] + " exited at start (is it installed? see " + dir_ + ")");
    }
    RedisClient c(port, args[0] == "redis-sentinel" ? "" : opt_.password);
    return c.ok() && c.text({"PING"}) == "PONG";
  });
  return p;
}

void SentinelGroup::stop(Proc& p) {
  if (p.pid <= 0) return;
  kill(p.pid, SIGKILL);
  waitpid(p.pid, nullptr, 0);
  p.pid = -1;
}

// Start-up and failover have no event a test can wait on; a short sleep
// between looks.
void SentinelGroup::waitUntil(const char* what, std::chrono::milliseconds limit, const std::function<bool()>& ready) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > end) throw std::runtime_error(std::string("timed out waiting for ") + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string SentinelGroup::url(const std::string& master, int db, bool with_password) const {
  std::string u = "redis+sentinel://";
  if (with_password && !opt_.password.empty()) u += ":" + opt_.password + "@";
  for (int i = 0; i < 3; ++i) u += (i ? "," : "") + opt_.host + ":" + std::to_string(sentinels_[i].port);
  u += "/" + master;
  if (db != 0) u += "/" + std::to_string(db);
  return u;
}

std::vector<int> SentinelGroup::sentinelPorts() const {
  return {sentinels_[0].port, sentinels_[1].port, sentinels_[2].port};
}

int SentinelGroup::masterPort() const {
  for (const auto& s : sentinels_) {
    RedisClient c(s.port, "");
    auto r = c.cmd({"SENTINEL", "get-master-addr-by-name", kMasterName});
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) return std::atoi(r->element[1]->str);
  }
  return -1;
}

pid_t SentinelGroup::masterPid() const {
  const int port = masterPort();
  for (const auto& s : servers_) {
    if (s.port == port) return s.pid;
  }
  return -1;
}

int SentinelGroup::killMaster() {
  const int port = masterPort();
  for (auto& s : servers_) {
    if (s.port == port) stop(s);
  }
  killed_port_ = port;
  return port;
}

void SentinelGroup::restartKilled(std::chrono::milliseconds limit) {
  if (killed_port_ <= 0) throw std::runtime_error("restartKilled: no server was killed");
  const int master = masterPort();
  if (master <= 0 || master == killed_port_) throw std::runtime_error("restartKilled: no new master yet");
  for (auto& s : servers_) {
    if (s.port == killed_port_ && s.pid <= 0) s = startServer(killed_port_, master);
  }
  killed_port_ = 0;
  waitForReplicas(limit);
}

bool SentinelGroup::waitForNewMaster(int old_port, std::chrono::milliseconds limit) const {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    const int port = masterPort();
    if (port > 0 && port != old_port) {
      RedisClient c(port, opt_.password);
      auto r = c.cmd({"ROLE"});
      if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
          std::string(r->element[0]->str, r->element[0]->len) == "master") {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace mwlab
