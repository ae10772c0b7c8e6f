#include "bench/fanin_process.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

#include <gloo/barrier.h>
#include <gloo/rendezvous/file_store.h>

#include "bench/suite_common.h"

namespace mwbench {
namespace fanin {
namespace {

using namespace common;

constexpr uint64_t kGlooSlot = 0x3000;
constexpr double kTimeoutS = kTimeoutMs / 1e3;

struct Header {
  uint64_t sender, seq, check;
};

uint64_t checkOf(uint64_t sender, uint64_t seq) { return (sender << 40 ^ seq) * 0x9e3779b97f4a7c15ULL + 17; }
unsigned char fillOf(uint64_t sender) { return static_cast<unsigned char>(0x40 + sender); }

void stamp(char* p, uint64_t sender, uint64_t seq) {
  Header h{sender, seq, checkOf(sender, seq)};
  std::memcpy(p, &h, sizeof h);
}

// Every message's header; the whole payload of each sender's last one.
void check(const char* p, uint64_t sender, uint64_t seq, bool full) {
  Header h;
  std::memcpy(&h, p, sizeof h);
  if (h.sender != sender || h.seq != seq || h.check != checkOf(sender, seq)) {
    throw Error("message " + std::to_string(seq) + " from sender " + std::to_string(sender) + " arrived wrong");
  }
  if (full) {
    for (size_t i = sizeof h; i < kMsgBytes; ++i) {
      if (static_cast<unsigned char>(p[i]) != fillOf(sender)) {
        throw Error("payload of message " + std::to_string(seq) + " from sender " + std::to_string(sender) +
                    " is wrong at byte " + std::to_string(i));
      }
    }
  }
}

// OURS' user_data and UCX's op id: sender and sequence number.
uint64_t idOf(int sender, uint64_t seq) { return static_cast<uint64_t>(sender) << 32 | seq; }
int senderOf(uint64_t id) { return static_cast<int>(id >> 32); }
uint64_t seqOf(uint64_t id) { return id & 0xffffffffu; }

}  // namespace

Process::Process(int rank, int senders, size_t messages, const BenchOptions& opt, const std::string& redis_url,
                 const std::string& ns, const std::string& store_dir)
    : rank_(rank), senders_(senders), m_(messages) {
  const mw_backend_t backend = backendOf(opt);
  ctx_ = newContext(redis_url, ns, kTimeoutMs, opt.spin_us);
  const int first = rank == 0 ? 1 : rank, last = rank == 0 ? senders : rank;
  for (int k = first; k <= last; ++k) {
    mw_world_t* w = nullptr;
    mwCheck(mw_world_create(ctx_, ("fan-" + std::to_string(k)).c_str(), rank == 0 ? 0 : 1, 2, backend, 0, kTimeoutMs,
                            &w),
            "mw_world_create");
    worlds_.push_back(w);
  }
  gloo_ = rawGlooContext(rank, senders + 1, store_dir, kTimeoutMs);
  if (opt.ucx) {
    // The leader connects to every sender, a sender to the leader, as OURS.
    ucx_ = std::make_unique<RawUcx>();
    gloo::rendezvous::FileStore store(store_dir);
    const std::string& mine = ucx_->address();
    store.set("ucx-" + std::to_string(rank), std::vector<char>(mine.begin(), mine.end()));
    for (int k = rank == 0 ? 1 : 0; k <= (rank == 0 ? senders : 0); ++k) {
      const std::vector<char> theirs = store.get("ucx-" + std::to_string(k));
      ucx_->connect(std::string(theirs.begin(), theirs.end()));
    }
  }
  const size_t nbuf = rank == 0 ? static_cast<size_t>(senders) * kWindow : kWindow;
  mem_.resize(nbuf * kMsgBytes);
  if (rank != 0) std::memset(mem_.data(), fillOf(static_cast<uint64_t>(rank)), mem_.size());
  for (size_t i = 0; i < nbuf; ++i) ubs_.push_back(gloo_->createUnboundBuffer(buf(i), kMsgBytes));
}

Process::~Process() {
  try {
    barrier();  // everyone is past the last message
    if (ucx_) ucx_->closeAll(5.0);
    for (auto* w : worlds_) mw_world_destroy(w);
    barrier();
  } catch (const std::exception&) {
    // A peer failed first; its failure is what the run reports.
  }
  mw_context_free(ctx_);
  ubs_.clear();
  ucx_.reset();
  gloo_.reset();
}

void Process::barrier() {
  gloo::BarrierOptions b(gloo_);
  b.setTag(11);
  gloo::barrier(b);
}

double Process::pass(Impl impl) {
  if (rank_ != 0) {
    barrier();
    switch (impl) {
      case Impl::Ours: senderOurs(); break;
      case Impl::Ucx: senderUcx(); break;
      case Impl::Gloo: senderGloo(); break;
    }
    barrier();
    return 0;
  }
  // The leader posts its receives, meets the senders at the barrier and
  // stops the clock at its last checked message.
  std::memset(mem_.data(), 0, mem_.size());
  double t0 = 0;
  auto started = [&] {
    barrier();
    t0 = nowSeconds();
  };
  const uint64_t total = static_cast<uint64_t>(senders_) * m_;
  uint64_t done = 0;
  auto received = [&](int k, uint64_t seq) {
    check(buf(slotOf(k, seq)), static_cast<uint64_t>(k), seq, seq + 1 == m_);
    ++done;
    return seq + kWindow < m_;  // repost
  };
  if (impl == Impl::Ours) {
    auto post = [&](int k, uint64_t seq) {
      mw_request_t* r = nullptr;
      mwCheck(mw_recv_async(worlds_[static_cast<size_t>(k - 1)], buf(slotOf(k, seq)), kMsgBytes, MW_UINT8, 1, &r),
              "mw_recv_async");
      mw_request_set_user_data(r, idOf(k, seq));
    };
    for (int k = 1; k <= senders_; ++k)
      for (uint64_t s = 0; s < std::min<uint64_t>(m_, kWindow); ++s) post(k, s);
    started();
    mw_completion_t comp[64];
    while (done < total) {
      size_t got = 0;
      mwCheck(mw_poll(ctx_, comp, 64, kTimeoutMs, &got), "mw_poll");
      if (got == 0) throw Error("leader: no completion in time");
      for (size_t i = 0; i < got; ++i) {
        if (comp[i].status != MW_OK) throw Error(std::string("recv failed: ") + mw_status_string(comp[i].status));
        const uint64_t id = comp[i].user_data;
        mw_request_free(comp[i].request);
        if (received(senderOf(id), seqOf(id))) post(senderOf(id), seqOf(id) + kWindow);
      }
    }
  } else if (impl == Impl::Ucx) {
    std::vector<RawUcxOp> ops(static_cast<size_t>(senders_) * kWindow);
    auto post = [&](int k, uint64_t seq) {
      RawUcxOp& op = ops[slotOf(k, seq)];
      op.id = idOf(k, seq);
      op.queue = true;
      ucx_->recv(buf(slotOf(k, seq)), kMsgBytes, static_cast<uint64_t>(k), op);
    };
    for (int k = 1; k <= senders_; ++k)
      for (uint64_t s = 0; s < std::min<uint64_t>(m_, kWindow); ++s) post(k, s);
    started();
    std::vector<RawUcxOp*> comp;
    while (done < total) {
      ucx_->poll(comp, kTimeoutS);
      for (RawUcxOp* op : comp) {
        if (op->status != UCS_OK || op->length != kMsgBytes) {
          throw Error(std::string("raw ucx recv failed: ") + ucs_status_string(op->status) + ", " +
                      std::to_string(op->length) + " bytes");
        }
        const uint64_t id = op->id;
        if (received(senderOf(id), seqOf(id))) post(senderOf(id), seqOf(id) + kWindow);
      }
    }
  } else {
    for (int k = 1; k <= senders_; ++k)
      for (uint64_t s = 0; s < std::min<uint64_t>(m_, kWindow); ++s)
        ubs_[slotOf(k, s)]->recv(k, kGlooSlot, 0, kMsgBytes);
    started();
    // Round robin over the senders' oldest receives.
    std::vector<uint64_t> next(static_cast<size_t>(senders_) + 1, 0);
    const std::chrono::milliseconds timeout(kTimeoutMs);
    while (done < total) {
      for (int k = 1; k <= senders_; ++k) {
        uint64_t& seq = next[static_cast<size_t>(k)];
        if (seq >= m_) continue;
        UB& b = *ubs_[slotOf(k, seq)];
        if (!b.waitRecv(nullptr, timeout)) throw Error("raw gloo recv aborted");
        if (received(k, seq)) b.recv(k, kGlooSlot, 0, kMsgBytes);
        ++seq;
      }
    }
  }
  const double t = nowSeconds() - t0;
  barrier();
  return t;
}

// Each sender keeps kWindow sends outstanding, waiting for the oldest
// before reusing its buffer.

void Process::senderOurs() {
  std::deque<mw_request_t*> inflight;
  for (uint64_t seq = 0; seq < m_; ++seq) {
    if (inflight.size() >= kWindow) {
      mwWait(inflight.front(), kTimeoutMs, "send");
      inflight.pop_front();
    }
    char* p = buf(seq % kWindow);
    stamp(p, static_cast<uint64_t>(rank_), seq);
    mw_request_t* r = nullptr;
    mwCheck(mw_send_async(worlds_[0], p, kMsgBytes, MW_UINT8, 0, &r), "mw_send_async");
    inflight.push_back(r);
  }
  for (auto* r : inflight) mwWait(r, kTimeoutMs, "send");
}

// UCX's senders spin as long as OURS' do by default (spin_us 20), then
// sleep: K senders polling without pause would starve the leader of a CPU
// whenever K+1 exceeds the cores, and the leader is what is compared.
void Process::senderUcx() {
  constexpr double kSpinS = 20e-6;
  std::vector<RawUcxOp> ops(kWindow);
  for (uint64_t seq = 0; seq < m_; ++seq) {
    RawUcxOp& op = ops[seq % kWindow];
    ucx_->waitSleeping(op, kSpinS, kTimeoutS);  // the send of seq - kWindow, if any
    char* p = buf(seq % kWindow);
    stamp(p, static_cast<uint64_t>(rank_), seq);
    ucx_->send(0, p, kMsgBytes, static_cast<uint64_t>(rank_), op);
  }
  for (RawUcxOp& op : ops) ucx_->waitSleeping(op, kSpinS, kTimeoutS);
}

void Process::senderGloo() {
  const std::chrono::milliseconds timeout(kTimeoutMs);
  std::deque<UB*> inflight;
  for (uint64_t seq = 0; seq < m_; ++seq) {
    if (inflight.size() >= kWindow) {
      if (!inflight.front()->waitSend(nullptr, timeout)) throw Error("raw gloo send aborted");
      inflight.pop_front();
    }
    stamp(buf(seq % kWindow), static_cast<uint64_t>(rank_), seq);
    UB* b = ubs_[seq % kWindow].get();
    b->send(0, kGlooSlot, 0, kMsgBytes);
    inflight.push_back(b);
  }
  for (UB* b : inflight)
    if (!b->waitSend(nullptr, timeout)) throw Error("raw gloo send aborted");
}

}  // namespace fanin
}  // namespace mwbench
