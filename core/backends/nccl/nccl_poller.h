// The one thread of a context that finds when NCCL operations finish, for
// every NCCL world.
//
// CUDA gives no way to sleep until an event completes that does not also
// put a host round trip between consecutive operations on the stream
// (cudaLaunchHostFunc) or ignore aborts (cudaEventSynchronize). So the
// poller queries the event of each world's oldest operation, pausing
// between rounds for a twentieth of the time that operation has run:
// completion is seen at most ~5% late, and a long operation costs a few
// thousand cheap queries a second at most. With nothing outstanding the
// thread sleeps until an operation is handed to it. While a caller waits
// in mw_wait for its bounded spin (spin_us), the poller queries without
// pausing, so a short operation is seen finished at once.
//
// Ownership: the watched operations belong to the poller's thread alone;
// other threads hand it work through a queue of commands under m_. An
// owner (one world) is called back only on that thread, and never after
// forget() returned.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/backends/nccl/nccl_plugin_abi.h"
#include "core/break_cause.h"
#include "core/deadline.h"
#include "core/op.h"
#include "core/progress_driver.h"

namespace mw {

class Request;

// How long to pause before asking NCCL again about something that has been
// pending for `waited`: a twentieth of it, from 5 us up to 500 us.
std::chrono::microseconds ncclPauseAfter(Clock::duration waited);

// What the poller needs of the world whose operations it watches.
class NcclOpOwner {
 public:
  virtual ~NcclOpOwner() = default;
  // What pending operations fail with once the owner aborted.
  virtual OpResult failure() const = 0;
  // An operation failed in NCCL or CUDA, or ran past op_timeout_ms, or a
  // drain ran out: the world breaks (and so calls NcclPoller::abort) for
  // `cause`, first seen at `evidence`.
  virtual void operationFailed(const std::string& why, BreakCause cause, Clock::time_point evidence) noexcept = 0;
};

class NcclPoller : public ProgressDriver {
 public:
  NcclPoller(const mwn_plugin& plugin, std::chrono::microseconds spin);
  ~NcclPoller() override;  // every owner forgot itself before
  NcclPoller(const NcclPoller&) = delete;
  NcclPoller& operator=(const NcclPoller&) = delete;

  // From the issuing thread, in issue order: `op` (the poller frees it)
  // completes `request` once its event completed. `op_timeout` <= 0: no
  // limit.
  void watch(NcclOpOwner* owner, std::shared_ptr<Request> request, mwn_op* op, std::chrono::milliseconds op_timeout);
  // Every watched and later operation of `owner` completes with
  // owner->failure(). Returns at once.
  void abort(NcclOpOwner* owner);
  // A member left: `owner`'s operations under way may still finish with
  // what it sent. Once none of them finished for `grace`, the owner hears
  // operationFailed(why).
  void drain(NcclOpOwner* owner, std::chrono::milliseconds grace, std::string why);
  // Drops `owner`: what it still has watched completes with its failure.
  // Returns once the poller neither holds an operation of it nor calls it.
  void forget(NcclOpOwner* owner);

  // A caller waiting for a request: spins up to spin_us for `done`, while
  // the poller queries without pausing.
  bool spinUntil(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) override;

  // Threads of this process that poll: for tests.
  static constexpr const char* kThreadName = "mw:ncclpoll";

 private:
  struct Watched {
    std::shared_ptr<Request> request;
    mwn_op* op = nullptr;
    Clock::time_point started;
    std::chrono::milliseconds op_timeout{0};
  };
  struct Command {
    enum class Kind { Watch, Abort, Drain, Forget };
    Command(Kind k, NcclOpOwner* o) : kind(k), owner(o) {}
    Kind kind;
    NcclOpOwner* owner;
    Watched watched;                         // Watch
    std::promise<void>* forgotten = nullptr;  // Forget
    std::chrono::milliseconds grace{0};       // Drain
    std::string why;                          // Drain
  };
  struct Owned {  // the poller thread's own record of one owner
    std::deque<Watched> ops;  // in issue order: one stream finishes them in order
    bool aborted = false;
    // Draining after a member left: when it fails unless an operation
    // finishes first, and the grace each finished operation restarts.
    Deadline drain_until = Deadline::max();
    std::chrono::milliseconds grace{0};
    std::string drain_why;
  };

  void post(Command c);
  void main();
  void apply(Command& c);
  void failAll(NcclOpOwner* owner, Owned& owned);
  void finish(Watched& w, Status s, const std::string& detail);
  // Queries each owner's oldest operations; returns when to look again.
  Deadline pollOnce();

  const mwn_plugin& plugin_;
  const std::chrono::microseconds spin_;
  std::atomic<int> spinners_{0};  // callers in spinUntil now
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<Command> commands_;  // under m_
  bool stopping_ = false;          // under m_
  // Under m_: owners with operations outstanding at the end of the last
  // round. The poller wakes for them anyway, so a watch of theirs does not
  // wake it: a burst of operations does not make the poller contend with
  // the issuing thread for CUDA at every issue.
  std::set<NcclOpOwner*> busy_;
  std::map<NcclOpOwner*, Owned> owned_;  // the poller thread's alone
  std::vector<std::shared_ptr<Request>> released_;  // completed this round; the poller thread's alone
  std::thread thread_;
};

}  // namespace mw
