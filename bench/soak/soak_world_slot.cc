#include "bench/soak/soak_world_slot.h"

#include <chrono>
#include <cstdio>

namespace mwbench {
namespace soak {

WorldSlot::WorldSlot(int index_in, const WorldSpec& spec_in, int member, Cell& cell_in, Notes& notes)
    : index(index_in),
      spec(spec_in),
      rank(spec_in.rankOf(member)),
      cell(cell_in),
      traffic(makeTraffic(spec_in, index_in, member, cell_in, notes)),
      order_(spec_in.members) {}

void WorldSlot::requestResize(mw_world_t* from, int new_size, std::vector<int> order) {
  cell.state.store(kForming);
  std::lock_guard<std::mutex> lock(mu_);
  resize_from_ = from;
  resize_to_ = new_size;
  order_ = std::move(order);
  want_ = true;
  cv_.notify_all();
}

bool WorldSlot::takeResize(mw_world_t** from, int* new_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!resize_from_) return false;
  *from = resize_from_;
  *new_size = resize_to_;
  resize_from_ = nullptr;
  return true;
}

std::vector<int> WorldSlot::order() {
  std::lock_guard<std::mutex> lock(mu_);
  return order_;
}

void WorldSlot::setOrder(std::vector<int> order) {
  std::lock_guard<std::mutex> lock(mu_);
  order_ = std::move(order);
}

bool WorldSlot::awaitRequest(const std::atomic<bool>& quit) {
  std::unique_lock<std::mutex> lock(mu_);
  busy_ = false;
  cv_.wait(lock, [&] { return want_ || quit.load(); });
  if (quit.load()) return false;
  want_ = false;
  busy_ = true;
  return true;
}

void WorldSlot::publish(mw_world_t* w) {
  std::lock_guard<std::mutex> lock(mu_);
  current_.store(w);
  created_ = w;
  if (early_.came && early_world_ == w && early_closes_ == closes_.load()) event_ = early_;
  early_ = BreakEvent();
  early_world_ = nullptr;
}

void WorldSlot::pause(int64_t ns, const std::atomic<bool>& quit) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(ns), [&] { return quit.load(); });
}

void WorldSlot::done() {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ = false;
}

void WorldSlot::requestCreate() {
  cell.state.store(kForming);
  std::lock_guard<std::mutex> lock(mu_);
  want_ = true;
  cv_.notify_all();
}

mw_world_t* WorldSlot::takeCreated() {
  std::lock_guard<std::mutex> lock(mu_);
  mw_world_t* w = created_;
  created_ = nullptr;
  return w;
}

bool WorldSlot::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return !busy_ && !want_;
}

bool WorldSlot::eventCame() {
  std::lock_guard<std::mutex> lock(mu_);
  return event_.came;
}

int64_t WorldSlot::eventNs() {
  std::lock_guard<std::mutex> lock(mu_);
  return event_.came ? event_.ns : 0;
}

int WorldSlot::eventBlamed() {
  std::lock_guard<std::mutex> lock(mu_);
  return event_.came ? event_.blamed : -1;
}

void WorldSlot::describeBreak(BreakRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  r.has_event = event_.came ? 1 : 0;
  r.blamed = event_.blamed;
  std::snprintf(r.detail, sizeof r.detail, "%s", event_.detail);
}

void WorldSlot::forget() {
  std::lock_guard<std::mutex> lock(mu_);
  current_.store(nullptr);
  event_ = BreakEvent();
}

void WorldSlot::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

bool WorldSlot::offer(const mw_event_t& ev, uint64_t closes_then, int64_t now_ns) {
  if (!ev.world || spec.name != ev.world_name) return false;
  BreakEvent e;
  e.came = true;
  e.ns = now_ns;
  std::snprintf(e.detail, sizeof e.detail, "%.*s", static_cast<int>(sizeof e.detail - 1), ev.detail);
  std::lock_guard<std::mutex> lock(mu_);
  // Ranks name members in the current incarnation's order (a shrink or
  // grow renumbers them).
  e.blamed = ev.peer_rank >= 0 && ev.peer_rank < static_cast<int>(order_.size())
                 ? order_[static_cast<size_t>(ev.peer_rank)]
                 : -1;
  if (closes_.load() != closes_then) return true;  // an older incarnation's
  if (current_.load() == ev.world) {
    if (!event_.came) event_ = e;
  } else {
    early_ = e;
    early_world_ = ev.world;
    early_closes_ = closes_then;
  }
  return true;
}

}  // namespace soak
}  // namespace mwbench
