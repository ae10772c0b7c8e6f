#include "tools/lab/redis_client.h"

#include <chrono>

namespace mwlab {

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

RedisClient::RedisClient(int port, const std::string& password)
    : RedisClient("127.0.0.1", port, password, std::chrono::seconds(2)) {}

RedisClient::RedisClient(const std::string& host, int port, const std::string& password,
                         std::chrono::milliseconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  c_ = redisConnectWithTimeout(host.c_str(), port, tv);
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

}  // namespace mwlab
