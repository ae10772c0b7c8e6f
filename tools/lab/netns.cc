#include "tools/lab/netns.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace mwlab {

namespace {

constexpr char kNsPrefix[] = "mwlab";  // namespaces: mwlab<pid>n<k>
constexpr char kDevPrefix[] = "ml";    // devices: ml<pid>v<k>a, ml<pid>v<k>b, ml<pid>b<k> (<= 15 chars)

struct Ran {
  bool ok;
  std::string output;
};

// A command through the shell, its stdout and stderr kept for the error.
Ran run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {false, "popen failed"};
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {pclose(p) == 0, out};
}

void must(const std::string& cmd) {
  Ran r = run(cmd);
  if (!r.ok) throw std::runtime_error("`" + cmd + "` failed: " + r.output);
}

std::string inNs(const std::string& ns) { return ns.empty() ? std::string() : " -n " + ns; }

// The pid in a name this lab gave (prefix, digits, a letter...), or -1.
long pidIn(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  size_t end = name.find_first_not_of("0123456789", prefix.size());
  if (end == prefix.size() || end == std::string::npos || end - prefix.size() > 9) return -1;
  return std::stol(name.substr(prefix.size(), end - prefix.size()));
}

bool deadPid(long pid) { return pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// What earlier runs left when they were killed before they could clean up.
void sweepStale() {
  std::istringstream ns(run("ip netns list").output);
  for (std::string line; std::getline(ns, line);) {
    std::string name = line.substr(0, line.find(' '));
    if (deadPid(pidIn(name, kNsPrefix))) run("ip netns del " + name);
  }
  std::istringstream links(run("ip -o link show").output);
  for (std::string line; std::getline(links, line);) {
    // "12: ml123v0b@if11: <...>"
    size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2);
    name = name.substr(0, name.find_first_of("@:"));
    if (deadPid(pidIn(name, kDevPrefix))) run("ip link del " + name);
  }
}

// Reads files of /sys as seen from `ns` in a forked child that enters it.
// Empty strings for files it could not read.
std::vector<std::string> readSys(const std::string& ns, const std::vector<std::string>& paths) {
  auto readAll = [&] {
    std::vector<std::string> out;
    for (const auto& p : paths) {
      std::ifstream in(p);
      std::string v;
      in >> v;
      out.push_back(v);
    }
    return out;
  };
  if (ns.empty()) return readAll();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::vector<std::string>(paths.size());
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    if (NetLab::enter(ns)) {
      for (const auto& v : readAll()) text += v + "\n";
    }
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[256];
  ssize_t n;
  while (pid > 0 && ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (pid > 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string v; out.size() < paths.size() && std::getline(lines, v);) out.push_back(v);
  out.resize(paths.size());
  return out;
}

}  // namespace

const char* netCutName(NetCut how) { return how == NetCut::LinkDown ? "link_down" : "drop"; }

std::string netnsUnavailable() {
  if (geteuid() != 0) return "needs root to make network namespaces";
  if (!run("ip netns list").ok) return "`ip netns` is not available (iproute2)";
  return "";
}

NetLab::NetLab() : tag_(std::to_string(getpid())) { sweepStale(); }

NetLab::~NetLab() {
  // Deleting a namespace takes its devices with it, and a veth pair goes as
  // a whole; bridges and the ends left here go explicitly.
  for (const auto& dev : links_) run("ip link del " + dev);
  for (const auto& ns : namespaces_) run("ip netns del " + ns);
}

std::string NetLab::name(const char* kind) { return kDevPrefix + tag_ + kind + std::to_string(next_++); }

std::string NetLab::addNamespace() {
  std::string ns = kNsPrefix + tag_ + "n" + std::to_string(next_++);
  must("ip netns add " + ns);
  namespaces_.push_back(ns);
  must("ip -n " + ns + " link set lo up");
  // No IPv6 chatter (router solicitations, DAD) on the counters the tests read.
  run("ip netns exec " + ns + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  return ns;
}

NetLink NetLab::addVeth(const std::string& ns_a, const std::string& cidr_a, const std::string& ns_b,
                        const std::string& cidr_b) {
  const std::string base = name("v");
  NetLink l{{ns_a, base + "a"}, {ns_b, base + "b"}};
  must("ip link add " + l.a.dev + " type veth peer name " + l.b.dev);
  // Tracked here until it moves: the pair goes with either end.
  links_.push_back(l.a.dev);
  for (const NetEnd* e : {&l.a, &l.b}) {
    if (!e->ns.empty()) must("ip link set " + e->dev + " netns " + e->ns);
  }
  links_.pop_back();
  if (ns_a.empty() || ns_b.empty()) links_.push_back(ns_a.empty() ? l.a.dev : l.b.dev);
  for (const auto& [e, cidr] : {std::make_pair(&l.a, &cidr_a), std::make_pair(&l.b, &cidr_b)}) {
    if (!cidr->empty()) must("ip" + inNs(e->ns) + " addr add " + *cidr + " dev " + e->dev);
    must("ip" + inNs(e->ns) + " link set " + e->dev + " up");
  }
  return l;
}

std::string NetLab::addBridge(const std::string& cidr) {
  std::string br = name("b");
  must("ip link add " + br + " type bridge");
  links_.push_back(br);
  run("sysctl -qw net.ipv6.conf." + br + ".disable_ipv6=1");
  if (!cidr.empty()) must("ip addr add " + cidr + " dev " + br);
  must("ip link set " + br + " up");
  return br;
}

NetLink NetLab::attach(const std::string& ns, const std::string& cidr, const std::string& bridge) {
  NetLink l = addVeth(ns, cidr, "", "");
  run("sysctl -qw net.ipv6.conf." + l.b.dev + ".disable_ipv6=1");
  must("ip link set " + l.b.dev + " master " + bridge);
  return l;
}

bool NetLab::setUp(const NetLink& link, bool up) {
  if (!run("ip" + inNs(link.a.ns) + " link set " + link.a.dev + (up ? " up" : " down")).ok) return false;
  return !up || (waitOperUp(link.a, 5000) && waitOperUp(link.b, 5000));
}

bool NetLab::setUpNow(const NetLink& link, bool up) {
  const std::string ip = "ip" + inNs(link.a.ns) + " link set " + link.a.dev + (up ? " up" : " down");
  if (!link.a.ns.empty() || link.a.dev.size() >= IFNAMSIZ) return run(ip).ok;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, link.a.dev.c_str(), link.a.dev.size());
  bool ok = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(up ? (ifr.ifr_flags | IFF_UP) : (ifr.ifr_flags & ~IFF_UP));
    ok = ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
  }
  if (fd >= 0) close(fd);
  return ok || run(ip).ok;
}

std::string NetLab::dropMethod() {
  if (netem_ < 0) {
    // Asks the kernel on a device of our own that no traffic uses.
    std::string probe = name("p");
    bool made = run("ip link add " + probe + "a type veth peer name " + probe + "b").ok;
    netem_ = made && run("tc qdisc add dev " + probe + "a root netem loss 100%").ok ? 1 : 0;
    if (made) run("ip link del " + probe + "a");
  }
  return netem_ ? "netem loss 100%" : "blackhole qdisc";
}

bool NetLab::setDrop(const NetLink& link, bool drop) {
  const std::string qdisc = dropMethod() == "netem loss 100%" ? "netem loss 100%" : "blackhole";
  bool ok = true;
  for (const NetEnd* e : {&link.a, &link.b}) {
    const std::string tc = "tc" + inNs(e->ns) + " qdisc ";
    ok = (drop ? run(tc + "replace dev " + e->dev + " root " + qdisc) : run(tc + "del dev " + e->dev + " root")).ok &&
         ok;
  }
  return ok;
}

bool NetLab::setCut(const NetLink& link, NetCut how, bool cut) {
  return how == NetCut::LinkDown ? setUp(link, !cut) : setDrop(link, cut);
}

NetBytes NetLab::bytes(const NetEnd& end) {
  const std::string dir = "/sys/class/net/" + end.dev + "/statistics/";
  std::vector<std::string> v = readSys(end.ns, {dir + "tx_bytes", dir + "rx_bytes"});
  NetBytes b;
  b.tx = v[0].empty() ? 0 : std::stoull(v[0]);
  b.rx = v[1].empty() ? 0 : std::stoull(v[1]);
  return b;
}

bool NetLab::waitOperUp(const NetEnd& end, int limit_ms) {
  for (int waited = 0;; waited += 10) {
    if (readSys(end.ns, {"/sys/class/net/" + end.dev + "/operstate"})[0] == "up") return true;
    if (waited >= limit_ms) return false;
    // The kernel offers no wait for a carrier here; a short sleep between looks.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool NetLab::enter(const std::string& ns) {
  int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok && unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
         umount2("/sys", MNT_DETACH) == 0 && mount("sysfs", "/sys", "sysfs", 0, nullptr) == 0;
}

Rails::Rails(int members, int links) : links_(static_cast<size_t>(members)) {
  for (int r = 0; r < members; ++r) ns_.push_back(lab_.addNamespace());
  for (int k = 0; k < links; ++k) {
    if (members == 2) {
      NetLink l = lab_.addVeth(ns_[0], address(k, 0) + "/24", ns_[1], address(k, 1) + "/24");
      links_[0].push_back(l);
      links_[1].push_back({l.b, l.a});
      continue;
    }
    const std::string bridge = lab_.addBridge();
    for (int r = 0; r < members; ++r) {
      links_[static_cast<size_t>(r)].push_back(lab_.attach(ns_[static_cast<size_t>(r)], address(k, r) + "/24", bridge));
    }
  }
}

uint64_t Rails::bytes(int r, int k) const {
  NetBytes b = NetLab::bytes(link(r, k).a);
  return b.tx + b.rx;
}

std::string Rails::address(int link, int rank) {
  return "10.71." + std::to_string(link + 1) + "." + std::to_string(rank + 1);
}

std::string Rails::addresses(const std::vector<int>& links, int rank) {
  std::string out;
  for (int l : links) out += (out.empty() ? "" : ",") + address(l, rank);
  return out;
}

}  // namespace mwlab
