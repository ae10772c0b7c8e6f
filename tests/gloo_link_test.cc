// GlooLink's waits and GlooP2p's receives over a real two-rank Gloo mesh in
// this process: what an abort, or a peer that closes, does to a transfer
// that has finished.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/common/error.h>
#include <gloo/types.h>

#include "core/backends/gloo/gloo_link.h"
#include "core/backends/gloo/gloo_p2p.h"

namespace {

using namespace std::chrono_literals;

class TcpContextOf : public gloo::rendezvous::Context {
 public:
  using gloo::rendezvous::Context::Context;
  std::shared_ptr<gloo::transport::tcp::Context> tcp() const {
    return std::dynamic_pointer_cast<gloo::transport::tcp::Context>(transportContext_);
  }
};

std::unique_ptr<mw::GlooLink> connect(gloo::rendezvous::HashStore& store, int rank,
                                      std::shared_ptr<gloo::transport::tcp::Context>* tcp_out = nullptr) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto ctx = std::make_shared<TcpContextOf>(rank, 2);
  ctx->setTimeout(10s);
  ctx->connectFullMesh(store, device);
  auto tcp = ctx->tcp();
  if (tcp_out) *tcp_out = tcp;
  return std::make_unique<mw::GlooLink>(std::move(ctx), std::move(tcp), std::map<std::string, int>{},
                                        std::make_shared<mw::AbortableBuffers>());
}

mw::Deadline in(std::chrono::milliseconds d) { return mw::Clock::now() + d; }

// A buffer on which the test does what Gloo's device thread does when a
// receive finishes and its pair then fails (the peer sent its last message
// and closed), both before the waiter wakes.
class FinishedThenFailed : public mw::GlooBuffer {
 public:
  using mw::GlooBuffer::GlooBuffer;
  void finishThenFail() {
    std::lock_guard<std::mutex> lock(m_);
    ++recvCompletions_;
    ex_ = std::make_exception_ptr(gloo::IoException("Connection closed by peer"));
    recvCv_.notify_all();
  }
};

}  // namespace

// Two messages arrive in order; once the second is in, so is the first.
// An abort then must not fail the wait on the first: its message is there.
TEST(GlooLink, WaitOnAFinishedReceiveSucceedsAfterAnAbort) {
  gloo::rendezvous::HashStore store;
  auto other = std::async(std::launch::async, [&] { return connect(store, 0); });
  auto link = connect(store, 1);
  auto sender = other.get();
  const uint64_t slot = gloo::Slot::build(0x50, 0);

  std::vector<char> first(4096), second(4096), out(4096, 'x');
  auto a = link->buffer(first.data(), first.size());
  auto b = link->buffer(second.data(), second.size());
  a->recv(0, slot, 0, first.size());
  b->recv(0, slot, 0, second.size());
  auto s = sender->buffer(out.data(), out.size());
  s->send(1, slot, 0, out.size());
  s->send(1, slot, 0, out.size());
  link->waitRecv(*b, 0, in(10s));

  link->abortWaits();
  EXPECT_NO_THROW(link->waitRecv(*a, 0, in(10s)));
  EXPECT_EQ(first[0], 'x');
  sender->waitSend(*s, 1, in(10s));
  sender->waitSend(*s, 1, in(10s));
}

// What has not arrived still fails at once after an abort.
TEST(GlooLink, WaitOnAnOpenReceiveFailsAfterAnAbort) {
  gloo::rendezvous::HashStore store;
  auto other = std::async(std::launch::async, [&] { return connect(store, 0); });
  auto link = connect(store, 1);
  auto sender = other.get();
  std::vector<char> never(16);
  auto a = link->buffer(never.data(), never.size());
  a->recv(0, gloo::Slot::build(0x50, 0), 0, never.size());
  link->abortWaits();
  const auto t0 = mw::Clock::now();
  EXPECT_THROW(link->waitRecv(*a, 0, in(10s)), mw::TransportError);
  EXPECT_LT(mw::Clock::now() - t0, 5s);
}

// A receive that finished counts even when its pair failed before the wait
// woke: a peer's graceful end (its last message, then its close) must not
// look like a break to the side still waiting for that message.
TEST(GlooLink, WaitOnAReceiveThatFinishedBeforeItsPairFailedSucceeds) {
  gloo::rendezvous::HashStore store;
  auto other = std::async(std::launch::async, [&] { return connect(store, 0); });
  std::shared_ptr<gloo::transport::tcp::Context> tcp;
  auto link = connect(store, 1, &tcp);
  auto peer = other.get();
  std::vector<char> in_buf(16);
  FinishedThenFailed b(tcp, in_buf.data(), in_buf.size());
  auto waiter = std::async(std::launch::async, [&] { link->waitRecv(b, 0, in(10s)); });
  // The waiter sleeps in Gloo's wait by then; if it came later it would see
  // the completion first and succeed either way.
  std::this_thread::sleep_for(200ms);
  b.finishThenFail();
  EXPECT_NO_THROW(waiter.get());
}

// A peer that ends gracefully sends its last message and closes at once.
// The receive that message matches succeeds though a later receive, still
// waiting for its header, sees the closed pair first when the headers are
// taken in order; only that later one fails. Eager and large messages.
TEST(GlooP2p, AReceiveWhoseMessageCameBeforeThePeerClosedSucceeds) {
  for (const size_t bytes : {size_t{1024}, mw::kEagerBytes + 1}) {
    SCOPED_TRACE(bytes);
    gloo::rendezvous::HashStore store;
    auto other = std::async(std::launch::async, [&] { return connect(store, 0); });
    auto link = connect(store, 1);
    auto sender_link = other.get();
    std::vector<char> out(bytes, 'm'), first(bytes), second(bytes);
    auto receiver = std::make_unique<mw::GlooP2p>(*link);
    auto last = receiver->postRecv(first.data(), first.size(), 0);
    auto never = receiver->postRecv(second.data(), second.size(), 0);
    auto sending = std::async(std::launch::async, [&] {
      {
        mw::GlooP2p sender(*sender_link);
        sender.postSend(out.data(), out.size(), 1)->run(in(10s));
      }
      sender_link.reset();  // its pairs close
    });
    // Until the sender is gone, headers are taken (as a lane does when it
    // looks), which posts the receive of a large payload.
    mw::OpResult ignored;
    while (sending.wait_for(1ms) != std::future_status::ready) {
      try {
        never->finished(ignored);
      } catch (const mw::TransportError&) {
        break;
      }
    }
    EXPECT_NO_THROW(sending.get());
    // Gloo's thread has seen the close by then; if not, the receive below
    // succeeds either way.
    std::this_thread::sleep_for(200ms);
    mw::OpResult r{mw::Status::Internal, "not run"};
    EXPECT_NO_THROW(r = last->run(in(10s)));
    EXPECT_EQ(r.status, mw::Status::Ok) << r.detail;
    EXPECT_EQ(first[0], 'm');
    EXPECT_EQ(first[bytes - 1], 'm');
    EXPECT_THROW(never->run(in(10s)), mw::TransportError);
    last.reset();
    never.reset();
    receiver.reset();
  }
}
