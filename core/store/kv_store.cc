#include "core/store/kv_store.h"

#include "core/capped_text.h"
#include "core/error.h"
#include "core/store/redis_signal.h"
#include "core/store/redis_values.h"

namespace mw {

void KvStore::set(const std::string& key, const std::vector<char>& data) {
  auto ttl = std::to_string((remaining(deadline_) + std::chrono::seconds(30)).count());
  auto conn = pool_.lease();
  std::string full = prefix_ + key;
  // The value lands before its token: a waiter released by the token finds it.
  conn->append({"SET", full, std::string(data.begin(), data.end()), "PX", ttl});
  conn->append({"RPUSH", full + ":sig", "1"});
  conn->append({"PEXPIRE", full + ":sig", ttl});
  for (int i = 0; i < 3; ++i) {
    auto r = conn->readReply();
    if (replyIsError(r.get())) {
      throw Error(Status::Store, "rendezvous set of " + full + ": " + cappedText(replyString(r.get())));
    }
  }
}

void KvStore::prefetch(const std::vector<std::string>& keys) {
  std::vector<std::string> mget = {"MGET"};
  std::vector<const std::string*> asked;
  for (const std::string& key : keys) {
    if (seen_.count(key)) continue;
    mget.push_back(prefix_ + key);
    asked.push_back(&key);
  }
  if (asked.empty()) return;
  auto conn = pool_.lease();
  auto r = conn->command(mget);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != asked.size()) {
    const std::string why = replyIsError(r.get()) ? ": " + cappedText(replyString(r.get())) : " (malformed reply)";
    throw Error(Status::Store, "rendezvous read of " + prefix_ + "*" + why);
  }
  for (size_t i = 0; i < asked.size(); ++i) {
    const redisReply* e = r->element[i];
    if (!e || e->type != REDIS_REPLY_STRING) continue;  // not there yet: get() waits for it
    std::vector<char> value(e->str, e->str + e->len);
    std::string problem = check_ ? check_(*asked[i], value) : "";
    if (!problem.empty()) throw Error(Status::Store, "Redis key " + prefix_ + *asked[i] + " holds " + cappedText(problem));
    seen_.emplace(*asked[i], std::move(value));
  }
}

std::vector<char> KvStore::get(const std::string& key) {
  auto cached = seen_.find(key);
  if (cached != seen_.end()) return cached->second;
  std::string full = prefix_ + key;
  auto conn = pool_.lease();
  for (bool signalled = false;; signalled = true) {
    auto r = conn->command({"GET", full});
    if (r && r->type == REDIS_REPLY_STRING) {
      std::vector<char> value(r->str, r->str + r->len);
      std::string problem = check_ ? check_(key, value) : "";
      if (!problem.empty()) throw Error(Status::Store, "Redis key " + full + " holds " + cappedText(problem));
      seen_.emplace(key, value);
      return value;
    }
    if (replyIsError(r.get())) {
      throw Error(Status::Store, "rendezvous get of " + full + ": " + cappedText(replyString(r.get())));
    }
    // set() writes the value before the token, so a token without a value
    // is not ours: waiting again would spin on it.
    if (signalled) {
      throw Error(Status::Store, "Redis key " + full + ":sig is signalled but " + full + " holds no value");
    }
    const std::string signal = tag_ + key + ":sig";
    incarnation_.watch(*conn, signal, deadline_);
    auto token = awaitSignal(*conn, full + ":sig", remaining(deadline_), pool_.timeout());
    if (!token) throw Error(Status::Timeout, "timed out waiting for a peer's transport address (" + key + ")");
    // An "err:" token is the incarnation's end (Incarnation::ended says
    // which); any other is set()'s.
    auto abort = parseGoToken(*token);
    if (abort && !abort->ok) incarnation_.ended(*conn, abort->why);
  }
}

}  // namespace mw
