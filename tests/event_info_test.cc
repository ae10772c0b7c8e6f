// mw_next_event_info on real worker processes over a real redis-server:
// the fields of mw_event_t and the new ones, read at the caller's size (an
// older, smaller struct gets its prefix; a newer, larger one zero past what
// the library knows), and a bad size refused before an event is taken.
// Path events' own fields are checked where paths are cut
// (failover_test.cc).
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

namespace {

// Rank 1 leaves the world once both ranks formed it, which breaks it for
// rank 0 (blaming rank 1); `body` then reads rank 0's event.
bool onBreakEvent(const char* name, int (*body)(mw_context_t* ctx, mw_world_t* world)) {
  mwtest::RedisServer redis;
  const std::string url = redis.url();
  return mwtest::runRanks(2, [&](int rank) -> int {
    mwtest::Member m;
    MWT_REQUIRE(m.join(url, name, rank, 2));
    int32_t x = 1, sum = 0;
    mw_request_t* r = nullptr;
    MWT_CHECK(mw_allreduce_async(m.world, &x, &sum, 1, MW_INT32, MW_SUM, &r));
    MWT_CHECK(mwtest::waitAndFree(r));
    if (rank == 1) {
      MWT_CHECK(mw_world_destroy(m.world));
      m.world = nullptr;
      return 0;
    }
    return body(m.ctx, m.world);
  });
}

TEST(EventInfo, CarriesWhatMwEventHasAndNoPathFieldsForABreak) {
  ASSERT_TRUE(onBreakEvent("info-full", [](mw_context_t* ctx, mw_world_t* world) -> int {
    mw_event_info_t ev;
    std::memset(&ev, 0x5a, sizeof ev);
    ev.size = sizeof ev;
    MWT_CHECK(mw_next_event_info(ctx, &ev, 30000));
    MWT_REQUIRE(ev.size == sizeof ev);
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    MWT_REQUIRE(ev.world == world);
    MWT_REQUIRE(ev.world_epoch == mw_world_epoch(world) && ev.world_epoch >= 1);
    MWT_REQUIRE(std::strcmp(ev.world_name, "info-full") == 0);
    MWT_REQUIRE(ev.peer_rank == 1);
    MWT_REQUIRE(ev.reason == MW_ERR_WORLD_BROKEN);
    MWT_REQUIRE(std::strlen(ev.detail) > 0 && std::strlen(ev.detail) < sizeof ev.detail);
    MWT_REQUIRE(ev.path_index == -1);
    MWT_REQUIRE(ev.local_address[0] == '\0' && ev.remote_address[0] == '\0');
    MWT_REQUIRE(ev.outstanding_messages == 0 && ev.outstanding_bytes == 0);
    return 0;
  }));
}

// A caller built against a header whose struct ended at `detail`.
TEST(EventInfo, OlderSmallerStructGetsOnlyItsPrefix) {
  ASSERT_TRUE(onBreakEvent("info-older", [](mw_context_t* ctx, mw_world_t* world) -> int {
    mw_event_info_t ev;
    std::memset(&ev, 0x5a, sizeof ev);
    ev.size = offsetof(mw_event_info_t, path_index);
    MWT_CHECK(mw_next_event_info(ctx, &ev, 30000));
    MWT_REQUIRE(ev.size == offsetof(mw_event_info_t, path_index));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN && ev.world == world && ev.peer_rank == 1);
    MWT_REQUIRE(std::strcmp(ev.world_name, "info-older") == 0);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&ev);
    for (size_t i = offsetof(mw_event_info_t, path_index); i < sizeof ev; ++i) MWT_REQUIRE(bytes[i] == 0x5a);
    return 0;
  }));
}

// A caller built against a header with fields this library does not know.
TEST(EventInfo, NewerLargerStructGetsZeroPastTheKnownFields) {
  ASSERT_TRUE(onBreakEvent("info-newer", [](mw_context_t* ctx, mw_world_t*) -> int {
    struct {
      mw_event_info_t ev;
      unsigned char later[40];
    } newer;
    std::memset(&newer, 0x5a, sizeof newer);
    newer.ev.size = sizeof newer;
    MWT_CHECK(mw_next_event_info(ctx, &newer.ev, 30000));
    MWT_REQUIRE(newer.ev.size == sizeof newer);
    MWT_REQUIRE(newer.ev.type == MW_EVENT_WORLD_BROKEN && newer.ev.path_index == -1);
    for (unsigned char c : newer.later) MWT_REQUIRE(c == 0);
    return 0;
  }));
}

// A refused call takes no event: the next good one gets it.
TEST(EventInfo, BadSizeIsRefusedAndLosesNoEvent) {
  ASSERT_TRUE(onBreakEvent("info-bad", [](mw_context_t* ctx, mw_world_t*) -> int {
    MWT_REQUIRE(mwtest::expectStatus(mw_next_event_info(ctx, nullptr, 0), MW_ERR_INVALID_ARGUMENT, "NULL out"));
    MWT_REQUIRE(std::strstr(mw_last_error(), "out is NULL") != nullptr);
    mw_event_info_t ev{};
    ev.size = 4;
    MWT_REQUIRE(mwtest::expectStatus(mw_next_event_info(ctx, &ev, 30000), MW_ERR_INVALID_ARGUMENT, "size 4"));
    MWT_REQUIRE(std::strstr(mw_last_error(), "mw_event_info_t size 4 is not") != nullptr);
    ev.size = 1 << 20;
    MWT_REQUIRE(mwtest::expectStatus(mw_next_event_info(ctx, &ev, 30000), MW_ERR_INVALID_ARGUMENT, "size 2^20"));
    MWT_REQUIRE(std::strstr(mw_last_error(), "mw_event_info_t size 1048576") != nullptr);
    ev.size = sizeof ev;
    MWT_CHECK(mw_next_event_info(ctx, &ev, 30000));
    MWT_REQUIRE(ev.type == MW_EVENT_WORLD_BROKEN);
    // Both calls read the one queue: it is empty now.
    mw_event_t old;
    MWT_REQUIRE(mwtest::expectStatus(mw_next_event(ctx, &old, 0), MW_ERR_TIMEOUT, "queue drained"));
    return 0;
  }));
}

}  // namespace
