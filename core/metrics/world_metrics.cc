#include "core/metrics/world_metrics.h"

#include <cctype>

namespace mw::metrics {
namespace {

// MW_ERR_WORLD_BROKEN -> world_broken.
std::string statusLabel(Status s) {
  std::string name = statusName(s);
  const std::string prefix = "MW_ERR_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

size_t statusSlot(Status s) {
  const int v = -static_cast<int>(s);
  return v > 0 && static_cast<size_t>(v) < kStatusSlots ? static_cast<size_t>(v) : 0;
}

}  // namespace

std::string pathName(size_t slot) {
  static const char* const kNamed[] = {"tag", "ring", "cma", "nccl", "tcp"};
  if (slot < 5) return kNamed[slot];
  return "rail" + std::to_string(slot - 5);
}

WorldMetrics::WorldMetrics(std::shared_ptr<Registry> registry, const FamilyIds& ids, std::string backend,
                           std::string world, size_t p2p_path)
    : registry_(std::move(registry)),
      ids_(ids),
      backend_(std::move(backend)),
      world_(std::move(world)),
      p2p_path_(p2p_path) {
  for (size_t k = 0; k < kOpKinds; ++k) {
    op_seconds_[k] = &registry_->histogram(ids_.op_seconds, labels({opName(static_cast<OpKind>(k))}));
  }
  for (size_t p = 0; p < kPathSlots; ++p) {
    sent_[p] = &registry_->counter(ids_.sent, labels({pathName(p)}));
    received_[p] = &registry_->counter(ids_.received, labels({pathName(p)}));
  }
  for (size_t c = 0; c < kBreakCauses; ++c) {
    registry_->counter(ids_.breaks, labels({breakCauseName(static_cast<BreakCause>(c))}));
  }
  for (auto& per_op : errors_) {
    for (auto& c : per_op) c.store(nullptr, std::memory_order_relaxed);
  }
}

std::vector<std::string> WorldMetrics::labels(std::vector<std::string> middle) const {
  middle.insert(middle.begin(), backend_);
  if (!world_.empty()) middle.push_back(world_);
  return middle;
}

void WorldMetrics::failed(OpKind kind, Status status) const noexcept {
  std::atomic<Counter*>& slot = errors_[static_cast<size_t>(kind)][statusSlot(status)];
  Counter* c = slot.load(std::memory_order_acquire);
  if (!c) {
    try {
      c = &registry_->counter(ids_.op_errors, labels({opName(kind), statusLabel(status)}));
    } catch (...) {
      return;  // out of memory: this error goes uncounted
    }
    slot.store(c, std::memory_order_release);
  }
  c->add();
}

void WorldMetrics::broke(BreakCause cause, std::chrono::nanoseconds detection) const noexcept {
  try {
    registry_->counter(ids_.breaks, labels({breakCauseName(cause)})).add();
    const auto ns = detection.count();
    registry_->histogram(ids_.detection, {breakCauseName(cause)}).observe(ns > 0 ? static_cast<uint64_t>(ns) : 0);
  } catch (...) {
  }
}

}  // namespace mw::metrics
