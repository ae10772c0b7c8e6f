// World and store state changes, in order, for mw_next_event.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/metrics/counter.h"
#include "core/path_change.h"
#include "core/wake_signal.h"

namespace mw {

class Readiness;
class World;

struct Event {
  enum class Type { WorldBroken = 1, StoreDown = 2, StoreUp = 3, PathDown = 4, PathUp = 5 };
  Type type;
  std::shared_ptr<World> world;  // null for store events
  std::string world_name;
  int peer_rank = -1;
  Status reason = Status::Ok;
  std::string detail;
  PathChange path;  // PathDown and PathUp only
};

class EventQueue {
 public:
  // Bounded so a program that never reads events cannot grow memory
  // forever; the oldest events are dropped first.
  static constexpr size_t kCapacity = 4096;

  // `readiness` (the context's fd) and `dropped` (counts what the bound
  // drops; null: nothing counts) outlive the queue.
  explicit EventQueue(Readiness& readiness, metrics::Counter* dropped = nullptr)
      : readiness_(readiness), dropped_(dropped) {}

  void push(Event e);
  // Waits up to `timeout` (negative: forever), or until wake().
  std::optional<Event> pop(std::chrono::milliseconds timeout);
  void wake();

 private:
  Readiness& readiness_;
  metrics::Counter* const dropped_;
  std::mutex m_;
  std::condition_variable cv_;
  WakeSignal wake_;
  std::deque<Event> events_;
};

}  // namespace mw
