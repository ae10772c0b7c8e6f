#include "bench/faults_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

namespace mwbench {
namespace faults {
namespace {

constexpr int kCreateTimeoutMs = 30000;

// Whether this address is already configured on this side (another run's
// veth): binding to an address that is not local fails.
bool addressIsLocal(const char* ip) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a.sin_addr);
  bool local = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return local;
}

}  // namespace

std::unique_ptr<Partition> makePartition(std::string* why) {
  *why = mwlab::netnsUnavailable();
  if (!why->empty()) return nullptr;
  if (addressIsLocal(kOuterAddr)) {
    *why = std::string(kOuterAddr) + " is already configured here (another run?)";
    return nullptr;
  }
  try {
    auto p = std::make_unique<Partition>();
    p->ns = p->lab.addNamespace();
    p->link = p->lab.addVeth("", std::string(kOuterAddr) + "/24", p->ns, std::string(kInnerAddr) + "/24");
    if (!p->lab.setUp(p->link, true)) {
      *why = "the veth pair did not come up";
      return nullptr;
    }
    return p;
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}

Settings settingsFor(const Env& env, const std::string& url, const std::string& bind) {
  Settings s = {{"redis_url", url}, {"namespace", env.mw_namespace}, {"bind_address", bind}};
  s.insert(s.end(), env.heartbeat.begin(), env.heartbeat.end());
  return s;
}

mw_world_t* joinPairWorld(mw_context_t* ctx, const std::string& name, int rank, mw_backend_t backend,
                          const char* who) {
  mw_world_t* w = nullptr;
  if (mw_world_create(ctx, name.c_str(), rank, 2, backend, 0, kCreateTimeoutMs, &w) == MW_OK) return w;
  std::fprintf(stderr, "mw_bench faults: %s: mw_world_create %s: %s\n", who, name.c_str(), mw_last_error());
  return nullptr;
}

}  // namespace faults
}  // namespace mwbench
