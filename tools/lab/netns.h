// A small network lab for the failover tests and benchmark: network
// namespaces, veth pairs and bridges made by this process and removed when
// the lab goes away, link faults (a link taken down, or every packet on it
// dropped), each link's byte counters, and forked children that run inside
// a namespace. Every name carries this process's pid, so runs side by side
// do not collide, and the leftovers of a run that was killed are removed by
// the next one. Addresses live only inside the lab's namespaces, so any
// subnet can be used without touching this host's own network, unless an
// end is left in this process's namespace on purpose (addVeth with ns "").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mwlab {

// Why this process cannot make namespaces (not root, no `ip netns`), or ""
// when it can.
std::string netnsUnavailable();

// A device in a namespace; ns "" is this process's own.
struct NetEnd {
  std::string ns;
  std::string dev;
};

// Two ends joined like a cable: a veth pair. `a` is the member's side.
struct NetLink {
  NetEnd a, b;
};

struct NetBytes {
  uint64_t tx = 0, rx = 0;
};

// How a link is cut: taken down, or every packet on it dropped.
enum class NetCut { LinkDown, Drop };
const char* netCutName(NetCut how);  // "link_down", "drop"

class NetLab {
 public:
  NetLab();
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // Each throws std::runtime_error naming the command that failed.
  // A namespace with lo up; returns its name.
  std::string addNamespace();
  // A veth pair between two namespaces, each end up with its address
  // ("10.71.1.1/24"). An ns of "" leaves that end in this process's
  // namespace (removed with the lab), its address then this host's on the
  // link: how a process here reaches members in the lab.
  NetLink addVeth(const std::string& ns_a, const std::string& cidr_a, const std::string& ns_b,
                  const std::string& cidr_b);
  // A bridge (a switch) in this process's namespace, up, with address
  // `cidr` when one is given (this host's address on that network).
  std::string addBridge(const std::string& cidr = "");
  // A member's port on a bridge: end a in `ns` with `cidr`, end b enslaved
  // to `bridge`.
  NetLink attach(const std::string& ns, const std::string& cidr, const std::string& bridge);

  // Faults. setUp takes end a down (the member's device: `ip link set
  // down`; the peer end loses its carrier) or back up and waits until both
  // ends are operationally up. setDrop drops every packet leaving either
  // end (netem loss 100% where the kernel has sch_netem, else the blackhole
  // qdisc), leaving the link up; false: the link is whole again.
  bool setUp(const NetLink& link, bool up);
  // setUp's change alone, at a moment known to microseconds: end a's IFF_UP
  // flag set or cleared by one SIOCSIFFLAGS ioctl, the change `ip link set`
  // makes, without the milliseconds of starting `ip`; it does not wait for
  // the link. For an end a in this process's namespace; anywhere else, or
  // if the ioctl fails, it runs `ip link set` instead.
  bool setUpNow(const NetLink& link, bool up);
  bool setDrop(const NetLink& link, bool drop);
  // "netem loss 100%" or "blackhole qdisc": what setDrop uses here.
  std::string dropMethod();
  // setUp(link, !cut) or setDrop(link, cut).
  bool setCut(const NetLink& link, NetCut how, bool cut);

  // The device's byte counters, from /sys/class/net/<dev>/statistics of
  // its own namespace.
  static NetBytes bytes(const NetEnd& end);

  // In a forked child, before it opens any socket: moves the process into
  // `ns` with a /sys of that namespace in a mount namespace of its own, as
  // `ip netns exec` does (UCX finds its network devices in /sys). False
  // when that failed.
  static bool enter(const std::string& ns);

 private:
  std::string name(const char* kind);
  bool waitOperUp(const NetEnd& end, int limit_ms);

  std::string tag_;
  int next_ = 0;
  std::vector<std::string> namespaces_, links_;  // links_: devices in this namespace
  int netem_ = -1;  // whether sch_netem exists: -1 not known yet
};

// `members` namespaces joined by `links` links, the same way for every
// member: two members by veth pairs straight between them, more by one
// bridge per link (a rail) with a port for each member. Link k is the subnet
// 10.71.<k+1>.0/24, on which member r is 10.71.<k+1>.<r+1>, so every member
// lists its addresses in the same order. Throws as NetLab does.
class Rails {
 public:
  Rails(int members, int links);
  NetLab& lab() { return lab_; }
  const std::string& ns(int r) const { return ns_.at(static_cast<size_t>(r)); }
  // Member r's link k; end a is in member r's namespace.
  const NetLink& link(int r, int k) const { return links_.at(static_cast<size_t>(r)).at(static_cast<size_t>(k)); }
  // Bytes through member r's end of link k, both directions.
  uint64_t bytes(int r, int k) const;
  static std::string address(int link, int rank);
  // data_addresses for member `rank` over these links, in this order.
  static std::string addresses(const std::vector<int>& links, int rank);

 private:
  NetLab lab_;
  std::vector<std::string> ns_;
  std::vector<std::vector<NetLink>> links_;
};

}  // namespace mwlab
