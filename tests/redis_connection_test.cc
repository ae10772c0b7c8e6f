// Runs against a real redis-server (from PATH) on a unix socket in a fresh
// temporary directory.
#include "core/store/redis_connection.h"
#include "core/store/redis_pool.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "tools/lab/temp_dir.h"

extern char** environ;

namespace mw {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A redis-server child process listening only on a unix socket.
class RedisServer {
 public:
  RedisServer() = default;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() { stop(); }

  // Starts the server and waits until the socket answers a PING (any reply,
  // NOAUTH included). Returns false with *why set on failure.
  bool start(const std::string& dir, const std::string& socketName,
             const std::vector<std::string>& extra, std::string* why) {
    socket_ = dir + "/" + socketName;
    std::string log = dir + "/" + socketName + ".log";
    std::vector<std::string> args = {"redis-server",
                                     "--port", "0",
                                     "--unixsocket", socket_,
                                     "--save", "",
                                     "--appendonly", "no",
                                     "--daemonize", "no",
                                     "--dir", dir};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null",
                                     O_RDONLY, 0);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, "redis-server", &fa, nullptr, argv.data(),
                          environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      *why = std::string("posix_spawnp(redis-server): ") + strerror(rc);
      return false;
    }
    pid_ = pid;

    const auto deadline = Clock::now() + 10s;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *why = "redis-server exited early; see " + log;
        return false;
      }
      if (answersPing()) return true;
      std::this_thread::sleep_for(10ms);  // test-only startup wait
    }
    *why = "redis-server did not answer PING within 10 s";
    return false;
  }

  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  const std::string& socket() const { return socket_; }
  std::string url(const std::string& userinfo = "",
                  const std::string& query = "") const {
    return "unix://" + userinfo + socket_ + query;
  }

 private:
  bool answersPing() const {
    redisContext* c = redisConnectUnix(socket_.c_str());
    bool ok = false;
    if (c != nullptr && c->err == 0) {
      void* r = redisCommand(c, "PING");
      ok = r != nullptr;
      if (r != nullptr) freeReplyObject(r);
    }
    if (c != nullptr) redisFree(c);
    return ok;
  }

  pid_t pid_ = -1;
  std::string socket_;
};

class RedisConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(server_.start(dir_, "r.sock", {}, &why)) << why;
  }

  void TearDown() override {
    server_.stop();
  }

  std::unique_ptr<RedisConnection> connect(const std::string& url,
                                           std::chrono::milliseconds t = 2s) {
    return RedisConnection::connect(parseRedisUrl(url), t);
  }

  mwlab::TempDir tmp_{"mw-redis-test-"};
  const std::string dir_ = tmp_.path();
  RedisServer server_;
};

TEST_F(RedisConnectionTest, SetGetRoundTrip) {
  auto c = connect(server_.url());
  ASSERT_FALSE(c->broken());
  EXPECT_GE(c->fd(), 0);
  std::string value("bin\0ary\r\nvalue", 14);
  RedisReply r = c->command({"SET", "key", value});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, REDIS_REPLY_STATUS);
  EXPECT_EQ(replyString(r.get()), "OK");
  r = c->command({"GET", "key"});
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, REDIS_REPLY_STRING);
  EXPECT_EQ(replyString(r.get()), value);
  r = c->command({"GET", "missing"});
  EXPECT_EQ(r->type, REDIS_REPLY_NIL);
  EXPECT_EQ(replyString(r.get()), "");
  EXPECT_EQ(replyInteger(r.get(), -7), -7);
}

TEST_F(RedisConnectionTest, Pipelining100Incrs) {
  auto c = connect(server_.url());
  for (int i = 0; i < 100; ++i) c->append({"INCR", "counter"});
  EXPECT_EQ(c->pendingReplies(), 100u);
  for (int i = 1; i <= 100; ++i) {
    RedisReply r = c->readReply();
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(r->integer, i);
  }
  EXPECT_EQ(c->pendingReplies(), 0u);
  RedisReply r = c->command({"GET", "counter"});
  EXPECT_EQ(replyInteger(r.get(), -1), 100);
}

TEST_F(RedisConnectionTest, MisuseOfPipelineIsInternalError) {
  auto c = connect(server_.url());
  try {
    c->readReply();
    FAIL() << "readReply() without append did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::Internal);
  }
  c->append({"PING"});
  EXPECT_THROW(c->command({"PING"}), Error);
  EXPECT_EQ(replyString(c->readReply().get()), "PONG");
  EXPECT_FALSE(c->broken());
  EXPECT_EQ(replyString(c->command({"PING"}).get()), "PONG");
}

TEST_F(RedisConnectionTest, ErrorReplyIsReturnedNotThrown) {
  auto c = connect(server_.url());
  RedisReply r = c->command({"NOSUCHCOMMAND", "x"});
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(replyIsError(r.get()));
  EXPECT_NE(replyString(r.get()).find("ERR"), std::string::npos);
  c->command({"SET", "s", "text"});
  r = c->command({"INCR", "s"});
  EXPECT_TRUE(replyIsError(r.get()));
  EXPECT_FALSE(c->broken());
  r = c->command({"PING"});
  EXPECT_EQ(replyString(r.get()), "PONG");
}

TEST_F(RedisConnectionTest, DbSelectionIsolatesKeys) {
  auto c0 = connect(server_.url());
  auto c2 = connect(server_.url("", "?db=2"));
  c0->command({"SET", "k", "zero"});
  RedisReply r = c2->command({"GET", "k"});
  EXPECT_EQ(r->type, REDIS_REPLY_NIL);
  c2->command({"SET", "k", "two"});
  EXPECT_EQ(replyString(c0->command({"GET", "k"}).get()), "zero");
  EXPECT_EQ(replyString(c2->command({"GET", "k"}).get()), "two");
  auto c2b = connect(server_.url("", "?db=2"));
  EXPECT_EQ(replyString(c2b->command({"GET", "k"}).get()), "two");
}

TEST_F(RedisConnectionTest, SelectOutOfRangeDbFails) {
  try {
    connect(server_.url("", "?db=99"));  // default server has 16 dbs
    FAIL() << "SELECT 99 did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::Store);
    EXPECT_NE(std::string(e.what()).find("SELECT"), std::string::npos);
  }
}

TEST_F(RedisConnectionTest, PasswordProtectedServer) {
  RedisServer secured;
  std::string why;
  ASSERT_TRUE(
      secured.start(dir_, "auth.sock", {"--requirepass", "s3cret"}, &why))
      << why;

  auto ok = RedisConnection::connect(parseRedisUrl(secured.url(":s3cret@")),
                                     2s);
  EXPECT_EQ(replyString(ok->command({"PING"}).get()), "PONG");
  EXPECT_EQ(ok->url().find("s3cret"), std::string::npos);

  auto withUser = RedisConnection::connect(
      parseRedisUrl(secured.url("default:s3cret@", "?db=3")), 2s);
  EXPECT_EQ(replyString(withUser->command({"PING"}).get()), "PONG");

  auto noAuth = RedisConnection::connect(parseRedisUrl(secured.url()), 2s);
  EXPECT_TRUE(replyIsError(noAuth->command({"GET", "x"}).get()));

  for (const std::string& userinfo :
       {std::string(":wrongpass@"), std::string("default:wrongpass@"),
        std::string("nosuchuser:s3cret@")}) {
    try {
      RedisConnection::connect(parseRedisUrl(secured.url(userinfo)), 2s);
      ADD_FAILURE() << "wrong credentials accepted: " << userinfo;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_EQ(e.status(), Status::Store);
      EXPECT_NE(msg.find("AUTH"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("s3cret"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("wrongpass"), std::string::npos) << msg;
    }
  }
  secured.stop();
}

TEST_F(RedisConnectionTest, MissingSocketThrowsQuickly) {
  const auto start = Clock::now();
  try {
    connect("unix://" + dir_ + "/nope.sock", 2s);
    FAIL() << "connect to a missing socket did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::Store);
    EXPECT_NE(std::string(e.what()).find("nope.sock"), std::string::npos);
  }
  EXPECT_LT(Clock::now() - start, 500ms);
}

TEST_F(RedisConnectionTest, NegativeTimeoutIsInvalid) {
  try {
    connect(server_.url(), -1ms);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::InvalidArgument);
  }
  auto c = connect(server_.url());
  EXPECT_THROW(c->setTimeout(-5ms), Error);
  EXPECT_THROW(c->command({}), Error);
  EXPECT_FALSE(c->broken());
}

TEST_F(RedisConnectionTest, ServerKilledBreaksConnection) {
  auto c = connect(server_.url());
  EXPECT_EQ(replyString(c->command({"PING"}).get()), "PONG");
  server_.stop();
  try {
    c->command({"PING"});
    FAIL() << "command() on a dead server did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::Store);
  }
  EXPECT_TRUE(c->broken());
  const auto start = Clock::now();
  for (int i = 0; i < 3; ++i) {
    try {
      c->command({"PING"});
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::Store);
      EXPECT_NE(std::string(e.what()).find("broken"), std::string::npos);
    }
  }
  EXPECT_THROW(c->append({"PING"}), Error);
  EXPECT_THROW(c->readAvailable(), Error);
  EXPECT_THROW(c->setTimeout(1s), Error);
  EXPECT_LT(Clock::now() - start, 50ms);
}

TEST_F(RedisConnectionTest, ServerKilledWhilePipelining) {
  auto c = connect(server_.url());
  server_.stop();
  for (int i = 0; i < 1000; ++i) c->append({"SET", "k", std::string(100, 'x')});
  EXPECT_THROW(c->readReply(), Error);
  EXPECT_TRUE(c->broken());
}

TEST_F(RedisConnectionTest, SubscribePublishViaPoll) {
  auto sub = connect(server_.url());
  auto pub = connect(server_.url());
  RedisReply r = sub->command({"SUBSCRIBE", "chan"});
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 3u);
  EXPECT_EQ(replyString(r->element[0]), "subscribe");
  EXPECT_EQ(replyString(r->element[1]), "chan");
  EXPECT_EQ(replyInteger(r->element[2], -1), 1);

  EXPECT_TRUE(sub->readAvailable().empty());  // nothing yet, does not block

  EXPECT_EQ(replyInteger(pub->command({"PUBLISH", "chan", "hello"}).get(), -1),
            1);

  std::vector<RedisReply> got;
  const auto deadline = Clock::now() + 2s;
  while (got.empty() && Clock::now() < deadline) {
    pollfd p{sub->fd(), POLLIN, 0};
    int n = poll(&p, 1, 2000);
    ASSERT_GE(n, 0);
    for (auto& m : sub->readAvailable()) got.push_back(std::move(m));
  }
  ASSERT_EQ(got.size(), 1u);
  const redisReply* m = got[0].get();
  ASSERT_EQ(m->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(m->elements, 3u);
  EXPECT_EQ(replyString(m->element[0]), "message");
  EXPECT_EQ(replyString(m->element[1]), "chan");
  EXPECT_EQ(replyString(m->element[2]), "hello");

  // Server death is reported by readAvailable() as Error(Store).
  server_.stop();
  pollfd p{sub->fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  EXPECT_THROW(sub->readAvailable(), Error);
  EXPECT_TRUE(sub->broken());
}

TEST_F(RedisConnectionTest, BlpopServerTimeoutReturnsNil) {
  auto c = connect(server_.url(), 100ms);
  c->setTimeout(2s);
  const auto start = Clock::now();
  RedisReply r = c->command({"BLPOP", "nolist", "0.2"});
  const auto elapsed = Clock::now() - start;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type, REDIS_REPLY_NIL);
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 1500ms);
  c->setTimeout(100ms);
  EXPECT_EQ(replyString(c->command({"PING"}).get()), "PONG");
}

TEST_F(RedisConnectionTest, SocketTimeoutBreaksConnection) {
  auto c = connect(server_.url(), 100ms);
  const auto start = Clock::now();
  try {
    c->command({"BLPOP", "nolist", "5"});
    FAIL() << "socket timeout did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::Store);
  }
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_TRUE(c->broken());
}

TEST(RedisReplyHelpers, DefensiveOnOddReplies) {
  EXPECT_EQ(replyString(nullptr), "");
  EXPECT_FALSE(replyIsError(nullptr));
  EXPECT_EQ(replyInteger(nullptr, 42), 42);

  redisReply r{};
  r.type = REDIS_REPLY_INTEGER;
  r.integer = -9;
  EXPECT_EQ(replyInteger(&r, 0), -9);
  EXPECT_EQ(replyString(&r), "");

  char buf[] = "12345";
  r.type = REDIS_REPLY_STRING;
  r.str = buf;
  r.len = 5;
  EXPECT_EQ(replyInteger(&r, 0), 12345);
  EXPECT_EQ(replyString(&r), "12345");
  r.len = 3;
  EXPECT_EQ(replyInteger(&r, 0), 123);
  char bad[] = "12a";
  r.str = bad;
  EXPECT_EQ(replyInteger(&r, 7), 7);
  char big[] = "99999999999999999999999";
  r.str = big;
  r.len = sizeof(big) - 1;
  EXPECT_EQ(replyInteger(&r, 7), 7);
  r.len = 0;
  EXPECT_EQ(replyInteger(&r, 7), 7);
  r.str = nullptr;
  r.len = 10;
  EXPECT_EQ(replyString(&r), "");
  EXPECT_EQ(replyInteger(&r, 7), 7);

  char err[] = "ERR boom";
  r.type = REDIS_REPLY_ERROR;
  r.str = err;
  r.len = 8;
  EXPECT_TRUE(replyIsError(&r));
  EXPECT_EQ(replyString(&r), "ERR boom");
  EXPECT_EQ(replyInteger(&r, 3), 3);

  r.type = REDIS_REPLY_ARRAY;
  r.elements = 0;
  r.element = nullptr;
  EXPECT_EQ(replyString(&r), "");
  EXPECT_FALSE(replyIsError(&r));
}

// Sentinel kills the clients of an instance it reconfigures (and Redis
// those idle past its `timeout`): a connection idle in the pool then is
// closed, and the next lease must not hand it out.
TEST_F(RedisConnectionTest, PoolDropsAnIdleConnectionItsServerClosed) {
  RedisConnector connector(parseRedisUrl(server_.url()), 2s);
  RedisPool pool(connector);
  {
    auto idle = pool.lease();
    ASSERT_NE(idle->command({"PING"}), nullptr);
  }
  auto killer = connect(server_.url());
  RedisReply killed = killer->command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  ASSERT_EQ(replyInteger(killed.get(), 0), 1);
  // Redis closed it before it answered; on loopback the close is here at
  // once, and the pause only leaves room for a loaded machine.
  std::this_thread::sleep_for(100ms);
  auto next = pool.lease();
  EXPECT_NO_THROW(next->command({"PING"}));
  EXPECT_FALSE(next->broken());
}

}  // namespace
}  // namespace mw
