// The rendezvous' key-value store (core/store/kv_store.h) against a real
// redis-server: prefetch() reads what is there in one round trip and get()
// returns it without asking again; a value the check refuses fails the
// prefetch naming the key, as get() would.
#include "core/store/kv_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/store/keys.h"
#include "core/store/redis_connector.h"
#include "core/store/redis_pool.h"
#include "core/store/redis_url.h"
#include "tests/support/redis_server.h"
#include "tools/lab/redis_client.h"

namespace {

using namespace std::chrono_literals;

std::vector<char> bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

struct Store : ::testing::Test {
  mwtest::RedisServer server;
  mw::RedisConnector connector{mw::parseRedisUrl(server.url()), 2s};
  mw::RedisPool pool{connector};
  mw::Keys keys{"kvtest"};
  mw::Incarnation inc{keys, "w", 7, 3};
  mw::Deadline deadline = mw::Clock::now() + 10s;
};

TEST_F(Store, PrefetchReadsWhatIsThereAndGetReturnsItWithoutAskingAgain) {
  mw::KvStore writer(pool, inc, "u:", deadline);
  writer.set("0", bytes("zero"));
  writer.set("1", bytes("one"));
  mw::KvStore reader(pool, inc, "u:", deadline);
  reader.prefetch({"0", "1", "2"});  // "2" is not there yet: left to get()
  // Gone from Redis now: only the prefetch can have them.
  mwlab::RedisClient admin(server.socketPath());
  admin.text({"DEL", reader.prefix() + "0", reader.prefix() + "1"});
  EXPECT_EQ(reader.get("0"), bytes("zero"));
  EXPECT_EQ(reader.get("1"), bytes("one"));
  writer.set("2", bytes("two"));
  EXPECT_EQ(reader.get("2"), bytes("two"));
}

TEST_F(Store, PrefetchRefusesAValueTheCheckRefusesNamingTheKey) {
  mw::KvStore writer(pool, inc, "u:", deadline);
  writer.set("1", bytes("garbage"));
  mw::KvStore reader(pool, inc, "u:", deadline);
  reader.checkValuesWith([](const std::string&, const std::vector<char>& v) {
    return v == bytes("garbage") ? std::string("not a record") : std::string();
  });
  try {
    reader.prefetch({"0", "1"});
    FAIL() << "the refused value was taken";
  } catch (const mw::Error& e) {
    EXPECT_EQ(e.status(), mw::Status::Store);
    EXPECT_NE(std::string(e.what()).find(reader.prefix() + "1"), std::string::npos) << e.what();
  }
}

}  // namespace
