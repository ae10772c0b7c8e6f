#include "core/ordered_completions.h"

#include <algorithm>

#include "core/request.h"

namespace mw {

OrderedCompletions::Ticket OrderedCompletions::enqueue(int lane, std::shared_ptr<Request> r) {
  Ticket t = next_++;
  lanes_[lane].slots.push_back(Slot{t, std::move(r), false, {}});
  return t;
}

OrderedCompletions::Slot* OrderedCompletions::find(int lane, Ticket t) {
  auto l = lanes_.find(lane);
  if (l == lanes_.end()) return nullptr;
  // Tickets grow along a lane: binary search.
  auto& q = l->second.slots;
  auto it = std::lower_bound(q.begin(), q.end(), t, [](const Slot& s, Ticket v) { return s.ticket < v; });
  return (it != q.end() && it->ticket == t) ? &*it : nullptr;
}

void OrderedCompletions::finish(int lane, Ticket t, OpResult result) {
  Slot* s = find(lane, t);
  if (!s) return;
  s->ended = true;
  s->result = std::move(result);
  release(lanes_[lane]);
}

void OrderedCompletions::finishOutOfOrder(int lane, Ticket t, OpResult result) {
  auto l = lanes_.find(lane);
  if (l == lanes_.end()) return;
  auto& q = l->second.slots;
  auto it = std::find_if(q.begin(), q.end(), [&](const Slot& s) { return s.ticket == t; });
  if (it == q.end()) return;
  std::shared_ptr<Request> r = std::move(it->request);
  q.erase(it);
  r->complete(result.status, result.detail);
  release(l->second);
}

void OrderedCompletions::release(Lane& lane) {
  while (!lane.slots.empty() && lane.slots.front().ended) {
    Slot s = std::move(lane.slots.front());
    lane.slots.pop_front();
    if (lane.lost) {
      s.result = lane.failure;
    } else if (s.result.status == Status::WorldBroken || s.result.status == Status::Cancelled) {
      lane.lost = true;
      lane.failure = s.result;
    }
    s.request->complete(s.result.status, s.result.detail);
  }
}

}  // namespace mw
