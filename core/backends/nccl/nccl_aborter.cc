#include "core/backends/nccl/nccl_aborter.h"

#include <pthread.h>

#include "core/signals.h"

namespace mw {

class NcclAborter::Teardown {
 public:
  explicit Teardown(mwn_comm* c) : comm(c) {}
  mwn_comm* const comm;
  // Under State::m.
  bool aborted = false;       // ncclCommAbort returned
  bool thread_frees = false;  // release() gave up waiting: the thread frees
};

struct NcclAborter::State {
  explicit State(const mwn_plugin& p) : plugin(p) {}
  const mwn_plugin& plugin;
  std::mutex m;
  std::condition_variable work;  // queue filled, or stopping
  std::condition_variable done;  // an abort returned
  std::deque<std::shared_ptr<Teardown>> queue;
  bool running = false;  // an abort is in NCCL now
  bool stopping = false;

  void main() {
    pthread_setname_np(pthread_self(), "mw:ncclabort");
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      work.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;
      std::shared_ptr<Teardown> t = std::move(queue.front());
      queue.pop_front();
      running = true;
      lock.unlock();
      plugin.comm_abort(t->comm);
      lock.lock();
      running = false;
      t->aborted = true;
      if (t->thread_frees) {
        lock.unlock();
        plugin.comm_free(t->comm);
        lock.lock();
      }
      done.notify_all();
    }
  }
};

NcclAborter::NcclAborter(const mwn_plugin& plugin) : state_(std::make_shared<State>(plugin)) {
  SigpipeBlockedForNewThreads no_sigpipe;
  thread_ = std::thread([s = state_] { s->main(); });
}

NcclAborter::~NcclAborter() {
  bool stuck;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->stopping = true;
    stuck = state_->running;
  }
  state_->work.notify_all();
  // Worlds wait for their own aborts before they go, so what is queued now
  // is only what a stuck abort holds up.
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

std::shared_ptr<NcclAborter::Teardown> NcclAborter::abort(mwn_comm* comm) {
  auto t = std::make_shared<Teardown>(comm);
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->queue.push_back(t);
  }
  state_->work.notify_one();
  return t;
}

bool NcclAborter::release(const std::shared_ptr<Teardown>& t, std::chrono::milliseconds grace) noexcept {
  {
    std::unique_lock<std::mutex> lock(state_->m);
    if (!state_->done.wait_for(lock, grace, [&] { return t->aborted; })) {
      t->thread_frees = true;
      return false;
    }
  }
  state_->plugin.comm_free(t->comm);
  return true;
}

}  // namespace mw
