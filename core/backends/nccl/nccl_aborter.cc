#include "core/backends/nccl/nccl_aborter.h"

#include <pthread.h>

#include <algorithm>

#include "core/log.h"
#include "core/signals.h"

namespace mw {

class NcclAborter::Teardown {
 public:
  Teardown(mwn_comm* c, int ms) : comm(c), finalize_ms(ms) {}
  mwn_comm* const comm;
  const int finalize_ms;  // < 0: abort at once
  // Under State::m.
  bool ended = false;         // the abort or finalization returned
  bool thread_frees = false;  // the thread frees it once it ended
  bool freed = false;
};

struct NcclAborter::State {
  explicit State(const mwn_plugin& p) : plugin(p) {}
  const mwn_plugin& plugin;
  std::mutex m;
  std::condition_variable work;  // queue filled, or stopping
  std::condition_variable done;  // an abort or finalization returned
  std::deque<std::shared_ptr<Teardown>> queue;
  bool running = false;  // an abort or finalization is in NCCL now
  bool stopping = false;

  void end(Teardown& t) {
    if (t.finalize_ms >= 0) {
      char err[512] = "";
      const int st = plugin.comm_finalize(t.comm, t.finalize_ms, err, sizeof err);
      if (st == MWN_OK) return;
      MW_LOG(LogLevel::Warn, "a destroyed NCCL world's communicator is aborted: %s", err);
    }
    plugin.comm_abort(t.comm);
  }

  void main() {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      work.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;
      std::shared_ptr<Teardown> t = std::move(queue.front());
      queue.pop_front();
      running = true;
      if (!t->ended) {
        lock.unlock();
        end(*t);
        lock.lock();
        t->ended = true;
      }
      if (t->thread_frees && !t->freed) {
        lock.unlock();
        plugin.comm_free(t->comm);
        lock.lock();
        t->freed = true;
      }
      running = false;
      done.notify_all();
    }
  }
};

NcclAborter::NcclAborter(const mwn_plugin& plugin) : state_(std::make_shared<State>(plugin)) {
  SigpipeBlockedForNewThreads no_sigpipe;
  thread_ = std::thread([s = state_] { s->main(); });
  // Named here, not by the thread itself, so that it carries its name
  // once the constructor returned.
  pthread_setname_np(thread_.native_handle(), "mw:ncclabort");
}

NcclAborter::~NcclAborter() {
  bool stuck;
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->stopping = true;
    stuck = state_->running || !state_->queue.empty();
  }
  state_->work.notify_all();
  // Worlds wait for their own aborts before they go, so what is queued now
  // is what a stuck abort holds up, or the free of a communicator handed
  // over (which may hang in NCCL): the thread finishes it on its own.
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

std::shared_ptr<NcclAborter::Teardown> NcclAborter::abort(mwn_comm* comm) { return queue(comm, -1); }

std::shared_ptr<NcclAborter::Teardown> NcclAborter::finalize(mwn_comm* comm, std::chrono::milliseconds grace) {
  return queue(comm, static_cast<int>(std::max<int64_t>(grace.count(), 0)));
}

std::shared_ptr<NcclAborter::Teardown> NcclAborter::queue(mwn_comm* comm, int finalize_ms) {
  auto t = std::make_shared<Teardown>(comm, finalize_ms);
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->queue.push_back(t);
  }
  state_->work.notify_one();
  return t;
}

bool NcclAborter::release(const std::shared_ptr<Teardown>& t, std::chrono::milliseconds grace) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  std::unique_lock<std::mutex> lock(state_->m);
  t->thread_frees = true;
  if (!state_->done.wait_until(lock, deadline, [&] { return t->ended; })) return false;
  // Freed on the thread too: a free that hangs in NCCL (as destroying an
  // aborted communicator can) holds this caller only until the deadline.
  if (!requeue(t)) {
    lock.unlock();
    state_->plugin.comm_free(t->comm);
    return true;
  }
  return state_->done.wait_until(lock, deadline, [&] { return t->freed; });
}

void NcclAborter::handOver(const std::shared_ptr<Teardown>& t) noexcept {
  std::unique_lock<std::mutex> lock(state_->m);
  t->thread_frees = true;
  if (!t->ended) return;  // queued or under way: the thread frees it when it ends
  if (!requeue(t)) {
    lock.unlock();
    state_->plugin.comm_free(t->comm);
  }
}

bool NcclAborter::requeue(const std::shared_ptr<Teardown>& t) noexcept {
  try {
    state_->queue.push_back(t);
  } catch (const std::bad_alloc&) {
    return false;
  }
  state_->work.notify_one();
  return true;
}

}  // namespace mw
