#include "core/store/redis_connection.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/capped_text.h"
#include "core/error.h"

namespace mw {

namespace {

// Blocks SIGPIPE for this thread while hiredis writes, and consumes a
// SIGPIPE the write raised, so a closed peer yields EPIPE, never a signal.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipeSet_);
    sigaddset(&pipeSet_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    if (!wasPending_) {
      sigset_t old;
      sigemptyset(&old);
      if (pthread_sigmask(SIG_BLOCK, &pipeSet_, &old) == 0) {
        restore_ = sigismember(&old, SIGPIPE) != 1;
      }
    }
  }
  ~SigpipeGuard() {
    int savedErrno = errno;
    if (!wasPending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        while (sigtimedwait(&pipeSet_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
      if (restore_) pthread_sigmask(SIG_UNBLOCK, &pipeSet_, nullptr);
    }
    errno = savedErrno;
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipeSet_;
  bool wasPending_ = false;
  bool restore_ = false;
};

timeval toTimeval(std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  return tv;
}

RedisReply wrap(void* r) {
  return RedisReply(static_cast<redisReply*>(r), &freeRedisReply);
}

struct Argv {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  explicit Argv(const std::vector<std::string>& args) {
    ptrs.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
};

std::string contextError(const redisContext* c) {
  if (c == nullptr) return "cannot allocate redis context";
  if (c->errstr[0] != '\0') return c->errstr;
  return "unknown hiredis error " + std::to_string(c->err);
}

}  // namespace

void freeRedisReply(redisReply* r) noexcept {
  if (r != nullptr) freeReplyObject(r);
}

RedisConnection::RedisConnection(redisContext* c, std::string redactedUrl)
    : c_(c), url_(std::move(redactedUrl)) {}

RedisConnection::~RedisConnection() {
  if (c_ != nullptr) redisFree(c_);
}

std::unique_ptr<RedisConnection> RedisConnection::connect(
    const RedisUrl& url, std::chrono::milliseconds timeout) {
  const std::string red = url.redacted();
  if (timeout.count() < 0)
    throw Error(Status::InvalidArgument,
                "redis " + red + ": negative connect timeout");
  redisContext* c = nullptr;
  const bool limited = timeout.count() > 0;
  const timeval tv = toTimeval(timeout);
  if (url.kind == RedisUrl::Kind::Unix) {
    c = limited ? redisConnectUnixWithTimeout(url.path.c_str(), tv)
                : redisConnectUnix(url.path.c_str());
  } else {
    c = limited ? redisConnectWithTimeout(url.host.c_str(), url.port, tv)
                : redisConnect(url.host.c_str(), url.port);
  }
  if (c == nullptr || c->err != 0) {
    std::string why = contextError(c);
    if (c != nullptr) redisFree(c);
    throw Error(Status::Store, "redis " + red + ": " + why);
  }
  std::unique_ptr<RedisConnection> conn(new RedisConnection(c, red));
  conn->setTimeout(timeout);
  if (url.kind == RedisUrl::Kind::Tcp && redisEnableKeepAlive(c) != REDIS_OK)
    conn->fail("enabling keepalive: " + contextError(c));

  if (!url.password.empty()) {
    std::vector<std::string> args{"AUTH"};
    if (!url.user.empty()) args.push_back(url.user);
    args.push_back(url.password);
    RedisReply r = wrap(nullptr);
    try {
      r = conn->command(args);
    } catch (const Error&) {
      throw Error(Status::Store,
                  "redis " + red + ": AUTH failed: " + conn->brokenReason_);
    }
    if (replyIsError(r.get()) || r == nullptr ||
        r->type != REDIS_REPLY_STATUS) {
      std::string msg = replyString(r.get());
      throw Error(Status::Store, "redis " + red + ": AUTH failed: " +
                                     (msg.empty() ? "unexpected reply" : cappedText(msg)));
    }
  }
  if (url.db != 0) {
    RedisReply r = wrap(nullptr);
    try {
      r = conn->command({"SELECT", std::to_string(url.db)});
    } catch (const Error&) {
      throw Error(Status::Store, "redis " + red + ": SELECT " +
                                     std::to_string(url.db) +
                                     " failed: " + conn->brokenReason_);
    }
    if (r == nullptr || r->type != REDIS_REPLY_STATUS) {
      std::string msg = replyString(r.get());
      throw Error(Status::Store,
                  "redis " + red + ": SELECT " + std::to_string(url.db) +
                      " failed: " + (msg.empty() ? "unexpected reply" : cappedText(msg)));
    }
  }
  return conn;
}

void RedisConnection::checkUsable() const {
  if (broken_)
    throw Error(Status::Store, "redis " + url_ +
                                   ": connection is broken after an earlier "
                                   "error: " + brokenReason_);
}

void RedisConnection::fail(const std::string& what) {
  broken_ = true;
  brokenReason_ = what;
  throw Error(Status::Store, "redis " + url_ + ": " + what);
}

RedisReply RedisConnection::command(const std::vector<std::string>& args) {
  checkUsable();
  if (args.empty())
    throw Error(Status::InvalidArgument, "redis " + url_ + ": empty command");
  if (pending_ != 0)
    throw Error(Status::Internal,
                "redis " + url_ + ": command() with " +
                    std::to_string(pending_) + " pipelined replies unread");
  Argv argv(args);
  void* r;
  {
    SigpipeGuard guard;
    r = redisCommandArgv(c_, argv.argc(), argv.ptrs.data(), argv.lens.data());
  }
  if (r == nullptr) fail(contextError(c_));
  return wrap(r);
}

void RedisConnection::append(const std::vector<std::string>& args) {
  checkUsable();
  if (args.empty())
    throw Error(Status::InvalidArgument, "redis " + url_ + ": empty command");
  Argv argv(args);
  if (redisAppendCommandArgv(c_, argv.argc(), argv.ptrs.data(),
                             argv.lens.data()) != REDIS_OK)
    fail(contextError(c_));
  ++pending_;
}

RedisReply RedisConnection::readReply() {
  checkUsable();
  if (pending_ == 0)
    throw Error(Status::Internal,
                "redis " + url_ + ": readReply() with no pipelined command");
  void* r = nullptr;
  int rc;
  {
    SigpipeGuard guard;
    rc = redisGetReply(c_, &r);
  }
  if (rc != REDIS_OK || r == nullptr) {
    freeRedisReply(static_cast<redisReply*>(r));
    fail(contextError(c_));
  }
  --pending_;
  return wrap(r);
}

void RedisConnection::setTimeout(std::chrono::milliseconds t) {
  checkUsable();
  if (t.count() < 0)
    throw Error(Status::InvalidArgument, "redis " + url_ + ": negative timeout");
  // A zero timeval means "no limit" for SO_RCVTIMEO/SO_SNDTIMEO.
  if (redisSetTimeout(c_, toTimeval(t)) != REDIS_OK)
    fail("setting socket timeout: " + contextError(c_));
}

int RedisConnection::fd() const { return c_ != nullptr ? c_->fd : -1; }

std::vector<RedisReply> RedisConnection::readAvailable() {
  checkUsable();
  if (pending_ != 0)
    throw Error(Status::Internal,
                "redis " + url_ + ": readAvailable() with " +
                    std::to_string(pending_) + " pipelined replies unread");
  std::vector<RedisReply> out;
  pollfd p{};
  p.fd = c_->fd;
  p.events = POLLIN;
  int n = ::poll(&p, 1, 0);
  if (n < 0 && errno != EINTR) fail(std::string("poll: ") + strerror(errno));
  if (n > 0) {
    if (p.revents & POLLNVAL) fail("poll: invalid socket");
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      if (redisBufferRead(c_) != REDIS_OK) fail(contextError(c_));
    }
  }
  for (;;) {
    void* r = nullptr;
    if (redisGetReplyFromReader(c_, &r) != REDIS_OK) {
      freeRedisReply(static_cast<redisReply*>(r));
      fail(contextError(c_));
    }
    if (r == nullptr) break;
    out.push_back(wrap(r));
  }
  return out;
}

std::string replyString(const redisReply* r) {
  if (r == nullptr) return "";
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
      r->type != REDIS_REPLY_ERROR)
    return "";
  if (r->str == nullptr) return "";
  return std::string(r->str, r->len);
}

bool replyIsError(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ERROR;
}

long long replyInteger(const redisReply* r, long long fallback) {
  if (r == nullptr) return fallback;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_STRING && r->str != nullptr && r->len > 0) {
    long long v = 0;
    const char* end = r->str + r->len;
    auto res = std::from_chars(r->str, end, v);
    if (res.ec == std::errc() && res.ptr == end) return v;
  }
  return fallback;
}

}  // namespace mw
