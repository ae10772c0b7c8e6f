#include "core/backends/ucx/ucx_peer_info.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/backends/ucx/ucx_tag.h"
#include "core/same_host/probe.h"

namespace mw {
namespace {

// "mwu1" had no paths; "mwu2" carried worker addresses in place of
// listeners; "mwu3" had no network namespace or probe word; "mwu4" no
// dropped ranks.
constexpr char kMagic[4] = {'m', 'w', 'u', '5'};
constexpr size_t kMaxPaths = 16;
constexpr size_t kMaxPathText = 255;
constexpr size_t kMaxHost = 256;

// Plain read(2): a /proc file of a process that exits meanwhile fails the
// read with ESRCH, which libstdc++'s filebuf would throw.
std::string readFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// Processes of one boot and one pid namespace can watch each other's pids
// (pidfd_open).
std::string hostKey() {
  std::string boot = readFile("/proc/sys/kernel/random/boot_id");
  while (!boot.empty() && (boot.back() == '\n' || boot.back() == ' ')) boot.pop_back();
  char ns[128] = {0};
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  if (n < 0) n = 0;
  char host[64] = {0};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + boot + "/" + std::string(ns, static_cast<size_t>(n));
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof b);
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool get(T& v) {
    if (s_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool bytes(size_t n, std::string& v) {
    if (s_.size() - pos_ < n) return false;
    v.assign(s_, pos_, n);
    pos_ += n;
    return true;
  }
  bool atEnd() const { return pos_ == s_.size(); }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

namespace {

// Field `n` (from 3: those after the command name) of /proc/<pid>/stat.
bool statField(int pid, int n, unsigned long long& value) {
  std::string text = readFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= n; ++i) {
    if (!(rest >> field)) return false;
  }
  char* end = nullptr;
  value = std::strtoull(field.c_str(), &end, 10);
  return end && *end == '\0';
}

}  // namespace

bool processStartTicks(int pid, unsigned long long& ticks) { return statField(pid, 22, ticks); }

bool processFlags(int pid, unsigned long& flags) {
  unsigned long long v = 0;
  if (!statField(pid, 9, v)) return false;
  flags = static_cast<unsigned long>(v);
  return true;
}

UcxPeerInfo thisProcess() {
  static const UcxPeerInfo self = [] {
    UcxPeerInfo p;
    p.host = hostKey();
    const samehost::Identity& id = samehost::self();
    p.net_namespace = id.net_namespace;
    p.probe_address = id.probe_address;
    p.probe_value = id.probe_value;
    p.pid = static_cast<int>(getpid());
    processStartTicks(p.pid, p.start_ticks);
    return p;
  }();
  UcxPeerInfo p = self;
  if (p.pid != static_cast<int>(getpid())) {  // a forked child
    p.pid = static_cast<int>(getpid());
    processStartTicks(p.pid, p.start_ticks);
  }
  return p;
}

std::string encodePeerInfo(const UcxPeerInfo& info) {
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, info.world_id);
  put<int32_t>(out, info.pid);
  put<uint64_t>(out, info.start_ticks);
  put<uint16_t>(out, static_cast<uint16_t>(info.host.size()));
  out += info.host;
  const size_t ns = std::min(info.net_namespace.size(), kMaxPathText);
  put<uint8_t>(out, static_cast<uint8_t>(ns));
  out.append(info.net_namespace, 0, ns);
  put<uint64_t>(out, info.probe_address);
  put<uint64_t>(out, info.probe_value);
  const size_t ip = std::min(info.listen_ip.size(), kMaxPathText);
  put<uint8_t>(out, static_cast<uint8_t>(ip));
  out.append(info.listen_ip, 0, ip);
  put<uint16_t>(out, info.listen_port);
  put<uint8_t>(out, static_cast<uint8_t>(std::min(info.paths.size(), kMaxPaths)));
  for (size_t i = 0; i < info.paths.size() && i < kMaxPaths; ++i) {
    const UcxPath& path = info.paths[i];
    const size_t n = std::min(path.ip.size(), kMaxPathText);
    put<uint8_t>(out, static_cast<uint8_t>(n));
    out.append(path.ip, 0, n);
    put<uint16_t>(out, path.listen_port);
    put<uint16_t>(out, path.probe_port);
  }
  const size_t dropped = std::min<size_t>(info.dropped.size(), ucxtag::kMaxRanks);
  put<uint32_t>(out, static_cast<uint32_t>(dropped));
  for (size_t i = 0; i < dropped; ++i) put<int32_t>(out, info.dropped[i]);
  return out;
}

bool decodePeerInfo(const std::string& bytes, UcxPeerInfo& out) {
  Reader r(bytes);
  std::string magic;
  uint16_t host_len = 0;
  uint8_t ip_len = 0;
  int32_t pid = 0;
  uint64_t ticks = 0;
  UcxPeerInfo p;
  if (!r.bytes(sizeof kMagic, magic) || std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) return false;
  if (!r.get(p.world_id) || !r.get(pid) || !r.get(ticks) || !r.get(host_len)) return false;
  if (p.world_id == 0 || p.world_id > ucxtag::kMaxWorldId || pid <= 0 || host_len > kMaxHost) return false;
  uint8_t ns_len = 0;
  if (!r.bytes(host_len, p.host) || !r.get(ns_len) || !r.bytes(ns_len, p.net_namespace)) return false;
  if (!r.get(p.probe_address) || !r.get(p.probe_value) || !r.get(ip_len)) return false;
  if (ip_len == 0 || !r.bytes(ip_len, p.listen_ip) || !r.get(p.listen_port) || p.listen_port == 0) return false;
  uint8_t paths = 0;
  if (!r.get(paths) || paths > kMaxPaths) return false;
  for (uint8_t i = 0; i < paths; ++i) {
    uint8_t n = 0;
    UcxPath path;
    if (!r.get(n) || n == 0 || !r.bytes(n, path.ip)) return false;
    if (!r.get(path.listen_port) || !r.get(path.probe_port)) return false;
    p.paths.push_back(std::move(path));
  }
  uint32_t dropped = 0;
  if (!r.get(dropped) || dropped > static_cast<uint32_t>(ucxtag::kMaxRanks)) return false;
  for (uint32_t i = 0; i < dropped; ++i) {
    int32_t rank = -1;
    if (!r.get(rank) || rank < 0 || rank >= ucxtag::kMaxRanks) return false;
    p.dropped.push_back(rank);
  }
  if (!r.atEnd()) return false;
  p.pid = pid;
  p.start_ticks = ticks;
  out = std::move(p);
  return true;
}

}  // namespace mw
