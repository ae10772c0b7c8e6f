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

namespace mw {

class World;

struct Event {
  enum class Type { WorldBroken = 1, StoreDown = 2, StoreUp = 3 };
  Type type;
  std::shared_ptr<World> world;  // null for store events
  std::string world_name;
  int peer_rank = -1;
  Status reason = Status::Ok;
  std::string detail;
};

class EventQueue {
 public:
  // Bounded so a program that never reads events cannot grow memory
  // forever; the oldest events are dropped first.
  static constexpr size_t kCapacity = 4096;

  void push(Event e);
  // Waits up to `timeout` (negative: forever).
  std::optional<Event> pop(std::chrono::milliseconds timeout);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

}  // namespace mw
