// The UCX state of one mw context: its progress engine, its links to peer
// workers, the ids its worlds carry in message tags, and what destroyed
// worlds left behind (operations UCX still holds, and receives that drain
// messages still arriving for them).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_links.h"

namespace mw {

class UcxOp;

class UcxContext {
 public:
  // Throws Error(Backend) when UCX cannot start.
  explicit UcxContext(std::chrono::microseconds spin);
  ~UcxContext();

  const std::shared_ptr<UcxEngine>& engine() const { return engine_; }

  // mw_context_free, once every world is destroyed: closes the endpoints
  // and stops the engine, even while requests still hold this object.
  void shutdown();

  // Under the engine lock.
  UcxLinks& links() { return *links_; }
  // A world id no live world of this context has (1 .. 2^24-1), chosen
  // round-robin so a late message of a destroyed world does not find a
  // new world with its id for a long time. Throws Error(Unsupported) when
  // every id is in use.
  uint32_t allocateWorldId();
  // The world is gone: its id is free once late messages for it have had
  // time to arrive; they are received and dropped meanwhile.
  void retireWorldId(uint32_t id);
  // Keeps an operation of a destroyed world whose transfers UCX still
  // holds (to a process that is gone, or stopped past destroy's bound)
  // until the worker goes, so a late callback finds it.
  void adopt(std::unique_ptr<UcxOp> op);

 private:
  struct Drain;
  void sweepDrains();  // under the lock

  std::shared_ptr<UcxEngine> engine_;
  std::unique_ptr<UcxLinks> links_;
  std::set<uint32_t> in_use_;
  uint32_t next_id_ = 1;
  std::map<uint32_t, std::unique_ptr<Drain>> drains_;
  std::vector<std::unique_ptr<UcxOp>> orphans_;
};

}  // namespace mw
