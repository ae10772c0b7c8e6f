// Ownership: one owner at a time, posted work in order, calls and waits
// answered, and a waiter taking the state over from the home thread.
#include "core/ownership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

// A home thread as an engine runs it: a turn when woken, then sleep.
class Home {
 public:
  explicit Home(std::chrono::microseconds patience = 1000us)
      : own([this] { wake(); }), patience_(patience), thread_([this] { run(); }) {}
  ~Home() {
    own.stopHome();
    wake();
    thread_.join();
  }
  void turn() {
    own.runPosted();
    own.checkWaits();
    ++turns;
  }
  std::thread::id id() const { return thread_.get_id(); }

  mw::Ownership own;
  std::atomic<int> turns{0};

 private:
  void wake() {
    std::lock_guard<std::mutex> l(m_);
    woken_ = true;
    cv_.notify_all();
  }
  void run() {
    for (;;) {
      if (!own.acquireHome(patience_)) return;
      do {
        turn();
      } while (!own.tryRelease());
      std::unique_lock<std::mutex> l(m_);
      cv_.wait_for(l, 20ms, [&] { return woken_; });  // an engine's home also wakes on its fds
      woken_ = false;
    }
  }

  const std::chrono::microseconds patience_;
  std::mutex m_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::thread thread_;
};

// The home thread may be in a turn of its own: a waiter gets the state
// once it let go.
bool takeOver(mw::Ownership& own) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    if (own.tryAcquire()) return true;
    std::this_thread::yield();
  }
  return false;
}

TEST(Ownership, CallRunsOnTheHomeThreadAndReturnsItsResult) {
  Home home;
  EXPECT_EQ(home.own.call([&] { return std::this_thread::get_id(); }), home.id());
  EXPECT_EQ(home.own.call([] { return 42; }), 42);
  EXPECT_FALSE(home.own.owned());
}

TEST(Ownership, CallRethrowsWhatTheWorkThrew) {
  Home home;
  EXPECT_THROW(home.own.call([]() -> int { throw std::runtime_error("bad value 7"); }), std::runtime_error);
  // The owner lived on.
  EXPECT_EQ(home.own.call([] { return 1; }), 1);
}

TEST(Ownership, CallOnTheOwnerRunsOnTheSpot) {
  Home home;
  const bool nested = home.own.call([&] { return home.own.call([&] { return home.own.owned(); }); });
  EXPECT_TRUE(nested);
}

// Four threads post, one waiter keeps taking the state over: every piece of
// work runs once, in each poster's order, and never two at a time.
TEST(Ownership, PostedWorkRunsOnceInOrderAndNeverConcurrently) {
  Home home;
  constexpr int kPosters = 4, kEach = 5000;
  std::atomic<int> inside{0}, overlaps{0};
  std::vector<int> last(kPosters, -1);  // the owner's
  int out_of_order = 0;                 // the owner's
  std::atomic<int> ran{0};
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    while (!stop) {
      if (home.own.want() || home.own.tryAcquire()) {
        if (inside.fetch_add(1) != 0) ++overlaps;
        inside.fetch_sub(1);
        do {
          home.own.runPosted();
        } while (!home.own.tryRelease());
      }
      home.own.unwant();
    }
  });
  std::vector<std::thread> posters;
  for (int p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        home.own.post([&, p, i] {
          if (inside.fetch_add(1) != 0) ++overlaps;
          if (last[p] != i - 1) ++out_of_order;
          last[p] = i;
          ++ran;
          inside.fetch_sub(1);
        });
      }
    });
  }
  for (auto& t : posters) t.join();
  // Posted before the call: run before it.
  const int seen = home.own.call([&] { return ran.load(); });
  stop = true;
  waiter.join();
  EXPECT_EQ(seen, kPosters * kEach);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(home.own.call([&] { return out_of_order; }), 0);
}

TEST(Ownership, AWaiterGoesBeforeTheHomeThreadButNotForever) {
  Home home(2000us);
  ASSERT_TRUE(home.own.want() || takeOver(home.own));
  // The waiter owns it: posted work waits for it or runs in its turns.
  std::atomic<bool> ran{false};
  std::thread([&] { home.own.post([&] { ran = true; }); }).join();
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(ran.load());
  home.own.runPosted();
  EXPECT_TRUE(ran.load());
  ASSERT_TRUE(home.own.tryRelease());
  // Still wanting, no longer owning: the home thread gets its turn once
  // its patience ran out.
  const int before = home.turns.load();
  std::thread([&] { home.own.post([] {}); }).join();
  const auto start = std::chrono::steady_clock::now();
  while (home.turns.load() == before && std::chrono::steady_clock::now() - start < 2s) std::this_thread::yield();
  EXPECT_GT(home.turns.load(), before);
  home.own.unwant();
}

TEST(Ownership, AnOwnerAsleepIsWokenByWorkPostedWhileItSleeps) {
  std::atomic<int> home_wakes{0}, owner_wakes{0};
  mw::Ownership own([&] { ++home_wakes; }, [&] { ++owner_wakes; });
  ASSERT_TRUE(own.tryAcquire());
  std::atomic<int> ran{0};
  auto postElsewhere = [&] { std::thread([&] { own.post([&] { ++ran; }); }).join(); };
  // Awake, the owner runs what was posted in its next turn: nobody is woken.
  postElsewhere();
  EXPECT_EQ(owner_wakes.load(), 0);
  // With work posted it does not sleep: it runs that first.
  EXPECT_FALSE(own.ownerSleeps());
  own.runPosted();
  EXPECT_EQ(ran.load(), 1);
  // Asleep, it is woken by what is posted, once per post.
  ASSERT_TRUE(own.ownerSleeps());
  postElsewhere();
  EXPECT_EQ(owner_wakes.load(), 1);
  own.ownerAwake();
  own.runPosted();
  EXPECT_EQ(ran.load(), 2);
  // Awake again: posting wakes nobody.
  postElsewhere();
  EXPECT_EQ(owner_wakes.load(), 1);
  EXPECT_EQ(home_wakes.load(), 0);
  own.runPosted();
  ASSERT_TRUE(own.tryRelease());
}

TEST(Ownership, WaitUntilSeesWhatTheOwnerChangedAndTimesOut) {
  Home home;
  int flag = 0;  // the owner's
  std::thread setter([&] {
    std::this_thread::sleep_for(20ms);
    home.own.post([&] { flag = 1; });
  });
  const auto turnHere = [] {};
  EXPECT_TRUE(home.own.waitUntil(std::chrono::steady_clock::now() + 5s, [&] { return flag == 1; }, turnHere));
  setter.join();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(home.own.waitUntil(std::chrono::steady_clock::now() + 30ms, [&] { return flag == 2; }, turnHere));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

TEST(Ownership, WithoutAHomeThreadPostedWorkRunsOnThePoster) {
  mw::Ownership own([] {});
  own.stopHome();
  std::thread::id ran_on;
  own.post([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(own.call([] { return 3; }), 3);
  EXPECT_FALSE(own.owned());
}

// An issuer runs its work itself when the state is free, and posts it, to
// run after what came first, when another thread owns it.
TEST(Ownership, RunOrPostRunsOnTheIssuerWhenFreeElsePostsInOrder) {
  int wakes = 0;  // no home thread here: nothing takes the state by itself
  mw::Ownership own([&] { ++wakes; });
  std::thread::id ran_on;
  bool owned_inside = false;
  own.runOrPost([&] {
    ran_on = std::this_thread::get_id();
    owned_inside = own.owned();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(owned_inside);
  EXPECT_FALSE(own.owned());
  EXPECT_EQ(wakes, 0);

  std::vector<int> order;  // the owner's
  std::atomic<bool> taken{false}, go{false};
  std::thread holder([&] {
    ASSERT_TRUE(own.tryAcquire());
    taken = true;
    while (!go) std::this_thread::yield();
    own.release();  // runs what was posted meanwhile
  });
  while (!taken) std::this_thread::yield();
  std::thread([&] { own.post([&] { order.push_back(1); }); }).join();
  own.runOrPost([&] { order.push_back(2); });
  EXPECT_TRUE(order.empty());  // taken: posted, not run here
  go = true;
  holder.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(own.owned());
}

// Work posted while the issuer ran its own goes to the home thread (woken),
// not to the issuer; what the issuer's work throws is logged, and the
// state is let go.
TEST(Ownership, RunOrPostLeavesOthersWorkToHomeAndLetsGoWhenItThrows) {
  std::atomic<int> wakes{0};
  mw::Ownership own([&] { ++wakes; });
  int ran = 0;
  own.runOrPost([&] {
    std::thread([&] { own.post([&] { ++ran; }); }).join();
    throw std::runtime_error("bad value 9");
  });
  EXPECT_FALSE(own.owned());
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(wakes.load(), 1);
  ASSERT_TRUE(own.tryAcquire());
  own.release();
  EXPECT_EQ(ran, 1);
}

}  // namespace
