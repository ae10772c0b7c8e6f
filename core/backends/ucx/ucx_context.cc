#include "core/backends/ucx/ucx_context.h"

#include "core/backends/ucx/ucx_devices.h"
#include "core/backends/ucx/ucx_op.h"
#include "core/backends/ucx/ucx_tag.h"
#include "core/error.h"

namespace mw {

namespace {

const char* addressKey(const Config& cfg) { return cfg.data_addresses.empty() ? "bind_address" : "data_addresses"; }

std::vector<std::string> publishedPaths(const Config& cfg) {
  std::vector<std::string> paths = cfg.configuredDataAddresses();
  return paths.empty() ? upInterfaceAddresses() : paths;
}

// One path worker per published address when there are two or more.
std::vector<std::string> pathDevices(const Config& cfg, const std::vector<std::string>& paths) {
  std::vector<std::string> devices;
  if (!cfg.path_failover || paths.size() < 2) return devices;
  for (const auto& ip : paths) devices.push_back(interfaceOf(ip, addressKey(cfg)));
  return devices;
}

}  // namespace

UcxContext::UcxContext(const Config& cfg)
    : paths_(publishedPaths(cfg)), path_timeout_(cfg.path_timeout), member_timeout_(cfg.heartbeat_timeout) {
  engine_ = std::make_shared<UcxEngine>(cfg.spin, netDevicesFor(cfg.configuredDataAddresses(), addressKey(cfg)),
                                        pathDevices(cfg, paths_));
  const std::vector<std::string> configured = cfg.configuredDataAddresses();
  const std::string bind_ip = configured.empty() ? std::string() : configured.front();
  links_ = std::make_unique<UcxLinks>(*engine_, bind_ip,
                                      !bind_ip.empty() ? bind_ip : paths_.empty() ? "127.0.0.1" : paths_.front());
  has_paths_ = engine_->pathCount() > 0;
  if (has_paths_) {
    engine_->call([&] {
      router_ = std::make_unique<UcxPathRouter>(*engine_);
      listeners_ = std::make_unique<UcxPathListeners>(*engine_, paths_);
    });
  }
  if (has_paths_) acceptors_ = std::make_unique<UcxPathAcceptors>(*engine_, paths_);
}

UcxContext::~UcxContext() { shutdown(); }

void UcxContext::shutdown() {
  const bool running = engine_->call([&] {
    if (!links_) return false;
    links_.reset();
    router_.reset();
    listeners_.reset();
    acceptors_.reset();
    engine_->progress();
    return true;
  });
  if (!running) return;
  engine_->shutdown();
  // After the worker: nothing can call back into them any more.
  orphans_.clear();
}

uint32_t UcxContext::allocateWorldId() {
  for (uint32_t tries = 0; tries < ucxtag::kMaxWorldId; ++tries) {
    uint32_t id = next_id_;
    next_id_ = next_id_ == ucxtag::kMaxWorldId ? 1 : next_id_ + 1;
    if (in_use_.insert(id).second) return id;
  }
  throw Error(Status::Unsupported, "every UCX world id of this context is in use (" +
                                       std::to_string(ucxtag::kMaxWorldId) + " worlds)");
}

void UcxContext::releaseWorldId(uint32_t id) { in_use_.erase(id); }

namespace {

std::string downEntry(const std::string& world, int peer, const std::string& peer_ip) {
  return peer_ip + " (world " + world + " rank " + std::to_string(peer) + ")";
}

}  // namespace

std::string UcxContext::pathsReport() const {
  std::lock_guard<std::mutex> lock(report_m_);
  std::string out;
  if (has_paths_) {
    for (const auto& ip : paths_) out += (out.empty() ? "" : " ") + ip;
    std::string down;
    for (const auto& d : down_) down += (down.empty() ? "" : ", ") + d;
    if (!down.empty()) out += "; down: " + down;
  }
  std::string lent, refused;
  for (const auto& [pair, why] : same_host_) {
    const std::string who = "world " + pair.first + " rank " + std::to_string(pair.second);
    if (why.empty()) {
      lent += (lent.empty() ? "" : ", ") + who;
    } else {
      refused += (refused.empty() ? "" : ", ") + who + " (" + why + ")";
    }
  }
  if (!lent.empty()) out += (out.empty() ? "" : "; ") + std::string("same-host: ") + lent;
  if (!refused.empty()) out += (out.empty() ? "" : "; ") + std::string("same-host refused, tcp: ") + refused;
  return out;
}

void UcxContext::noteSameHost(const std::string& world, int peer, bool lent, const std::string& why) {
  std::lock_guard<std::mutex> lock(report_m_);
  same_host_[{world, peer}] = lent ? std::string() : why;
}

void UcxContext::forgetSameHost(const std::string& world) {
  std::lock_guard<std::mutex> lock(report_m_);
  for (auto it = same_host_.begin(); it != same_host_.end();) {
    it = it->first.first == world ? same_host_.erase(it) : std::next(it);
  }
}

void UcxContext::notePath(const std::string& world, int peer, const std::string& peer_ip, bool up) {
  std::lock_guard<std::mutex> lock(report_m_);
  if (up) {
    down_.erase(downEntry(world, peer, peer_ip));
  } else {
    down_.insert(downEntry(world, peer, peer_ip));
  }
}

void UcxContext::forgetPaths(const std::string& world) {
  std::lock_guard<std::mutex> lock(report_m_);
  const std::string tag = " (world " + world + " rank ";
  for (auto it = down_.begin(); it != down_.end();) {
    it = it->find(tag) != std::string::npos ? down_.erase(it) : std::next(it);
  }
}

void UcxContext::adopt(std::unique_ptr<UcxOp> op) { orphans_.push_back(std::move(op)); }

}  // namespace mw
