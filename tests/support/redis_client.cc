#include "tests/support/redis_client.h"

#include <chrono>
#include <thread>

namespace mwtest {

RedisClient::RedisClient(const std::string& socket, const std::string& user, const std::string& password) {
  c_ = redisConnectUnix(socket.c_str());
  if (!ok() || password.empty()) return;
  std::vector<std::string> auth = {"AUTH"};
  if (!user.empty()) auth.push_back(user);
  auth.push_back(password);
  auto r = cmd(auth);
  if (!r || r->type == REDIS_REPLY_ERROR) {
    redisFree(c_);
    c_ = nullptr;
  }
}

RedisClient::RedisClient(int port, const std::string& password) {
  const timeval tv{2, 0};
  c_ = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (ok()) redisSetTimeout(c_, tv);
  if (!ok() || password.empty()) return;
  auto r = cmd({"AUTH", password});
  if (!r || r->type == REDIS_REPLY_ERROR) {
    redisFree(c_);
    c_ = nullptr;
  }
}

RedisClient::~RedisClient() {
  if (c_) redisFree(c_);
}

RedisReplyPtr RedisClient::cmd(const std::vector<std::string>& args) {
  if (!ok()) return RedisReplyPtr(nullptr, freeReplyObject);
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* r = redisCommandArgv(c_, static_cast<int>(args.size()), argv.data(), lens.data());
  return RedisReplyPtr(static_cast<redisReply*>(r), freeReplyObject);
}

std::string RedisClient::text(const std::vector<std::string>& args) {
  auto r = cmd(args);
  if (!r) return "(no connection)";
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER: return std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_ARRAY: return "(array of " + std::to_string(r->elements) + ")";
    default: return "(other)";
  }
}

RedisReplyPtr RedisClient::nextPushed(std::chrono::milliseconds timeout) {
  if (!ok()) return RedisReplyPtr(nullptr, freeReplyObject);
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  redisSetTimeout(c_, tv);
  void* r = nullptr;
  if (redisGetReply(c_, &r) != REDIS_OK) r = nullptr;
  return RedisReplyPtr(static_cast<redisReply*>(r), freeReplyObject);
}

void startPinger(Workers& workers, const std::string& socket, PingStats& stats) {
  workers.add([socket, &stats] {
    RedisClient c(socket);
    if (!c.ok()) return 1;
    while (!stats.stop.load()) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = c.cmd({"PING"});
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
      if (!r || r->type != REDIS_REPLY_STATUS) stats.failures.fetch_add(1);
      if (us > stats.worst_us.load()) stats.worst_us.store(us);
      stats.pings.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  });
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stats.pings.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace mwtest
