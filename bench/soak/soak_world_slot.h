// One world of a soak member, as its three threads share it: the main
// thread runs its traffic and destroys it, its creator thread forms each
// incarnation, and the event thread hands it the incarnation's break event.
// The matching of events to incarnations lives here: a world handle names
// one incarnation only while it lives, and the next incarnation can reuse
// it.
#pragma once

#include <multiworld/multiworld.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/soak/soak_board.h"
#include "bench/soak/soak_topology.h"
#include "bench/soak/soak_traffic.h"

namespace mwbench {
namespace soak {

class WorldSlot {
 public:
  WorldSlot(int index, const WorldSpec& spec, int member, Cell& cell, Notes& notes);

  const int index;  // in the topology
  const WorldSpec& spec;
  const int rank;
  Cell& cell;
  const std::unique_ptr<WorldTraffic> traffic;

  // Creator side.
  // Waits until asked to form an incarnation (true) or until `quit` (false).
  bool awaitRequest(const std::atomic<bool>& quit);
  // A formed incarnation, for the main thread; the break event that came
  // before it (mw_world_create may return a world that broke already) is
  // its own.
  void publish(mw_world_t* w);
  // Waits `ns` before the next try, or less once `quit`.
  void pause(int64_t ns, const std::atomic<bool>& quit);
  void done();  // no attempt under way any more
  // Wakes a creator that waits, to see `quit`.
  void wake();

  // A shrink (new_size < 0) or grow of `from` instead of a create: the
  // creator takes it (takeResize), and the world's ranks are then `order`'s
  // members.
  void requestResize(mw_world_t* from, int new_size, std::vector<int> order);
  bool takeResize(mw_world_t** from, int* new_size);
  // The member id of each rank of the current incarnation; a create in
  // the topology's order sets it, a resize or a newcomer's join (the
  // board's order) theirs.
  std::vector<int> order();
  void setOrder(std::vector<int> order);

  // Main thread side.
  void requestCreate();
  mw_world_t* takeCreated();
  // Stop asked while forming: true when no attempt is under way, so the
  // world can close for good (one under way ends gracefully if it forms).
  bool idle();
  bool eventCame();
  // The break event's time, 0 = none; the member it blamed, -1 = none;
  // and copies it into a record.
  int64_t eventNs();
  int eventBlamed();
  void describeBreak(BreakRecord& r);
  // Before mw_world_destroy: the event thread stops matching its handle.
  void forget();
  // Once mw_world_destroy returned.
  void destroyed() { closes_.fetch_add(1); }

  // Event thread side. The close count is read just before an event is
  // taken (closeCount), and given with it.
  uint64_t closeCount() const { return closes_.load(); }
  // True when `ev` (a break event) names this world.
  bool offer(const mw_event_t& ev, uint64_t closes_then, int64_t now_ns);

  std::thread creator;

  // Main thread only.
  mw_world_t* world = nullptr;
  int left = -1;  // the member a shrink excluded, for the grow that takes it back
  int64_t first_sign_ns = 0;
  int64_t end_began_ns = 0;
  int64_t break_in_end_ns = 0;  // a break sign came during a graceful end
  bool during_end = false;

 private:
  struct BreakEvent {
    bool came = false;
    int64_t ns = 0;
    int blamed = -1;  // member id
    char detail[200] = {0};
  };

  // Bumped once each destroy returned. An event taken while an older
  // incarnation lived may name its handle; with the count read before it
  // was taken, a match is dropped when the count has moved since.
  std::atomic<uint64_t> closes_{0};
  // The world events are matched against: set when a create succeeds,
  // cleared before a destroy.
  std::atomic<mw_world_t*> current_{nullptr};

  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  bool want_ = false;              // main -> creator: form an incarnation
  mw_world_t* resize_from_ = nullptr;  // main -> creator: resize this one instead
  int resize_to_ = 0;
  std::vector<int> order_;         // member id by rank
  bool busy_ = false;              // the creator is forming one
  mw_world_t* created_ = nullptr;  // creator -> main
  BreakEvent event_;               // the current world's break event
  // A break event of this world's name that came before the creator had
  // the world, with the close count then: the new world's once published,
  // if that is the world it names and nothing closed meanwhile.
  BreakEvent early_;
  mw_world_t* early_world_ = nullptr;
  uint64_t early_closes_ = 0;
};

}  // namespace soak
}  // namespace mwbench
