#include "core/backends/gloo/gloo_store.h"

#include <cstdio>

#include "core/error.h"

namespace mw {
namespace {

std::string secondsArg(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

}  // namespace

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  auto ttl = std::to_string((remaining(deadline_) + std::chrono::seconds(30)).count());
  auto conn = pool_.lease();
  std::string full = prefix_ + key;
  std::vector<std::string> push = {"RPUSH", full + ":sig"};
  for (int i = 0; i < size_; ++i) push.emplace_back("1");
  conn->append({"SET", full, std::string(data.begin(), data.end()), "PX", ttl});
  conn->append(push);
  conn->append({"PEXPIRE", full + ":sig", ttl});
  for (int i = 0; i < 3; ++i) {
    auto r = conn->readReply();
    if (replyIsError(r.get())) throw Error(Status::Store, "gloo rendezvous set: " + replyString(r.get()));
  }
}

std::vector<char> GlooStore::get(const std::string& key) {
  auto cached = seen_.find(key);
  if (cached != seen_.end()) return cached->second;
  std::string full = prefix_ + key;
  auto conn = pool_.lease();
  for (;;) {
    auto r = conn->command({"GET", full});
    if (r && r->type == REDIS_REPLY_STRING) {
      std::vector<char> value(r->str, r->str + r->len);
      seen_.emplace(key, value);
      return value;
    }
    if (replyIsError(r.get())) throw Error(Status::Store, "gloo rendezvous get: " + replyString(r.get()));
    auto left = remaining(deadline_);
    if (left.count() <= 0) {
      throw Error(Status::Timeout, "timed out waiting for a peer's transport address (" + key + ")");
    }
    conn->setTimeout(left + pool_.timeout());
    auto sig = conn->command({"BLPOP", full + ":sig", secondsArg(left)});
    conn->setTimeout(pool_.timeout());
    if (replyIsError(sig.get())) throw Error(Status::Store, "gloo rendezvous wait: " + replyString(sig.get()));
  }
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  for (const auto& k : keys) get(k);
}

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) {
  wait(keys);
}

}  // namespace mw
