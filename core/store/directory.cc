#include "core/store/directory.h"

#include <map>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/store/redis_connector.h"
#include "core/store/redis_url.h"

namespace mw {
namespace {

std::map<std::string, std::string> hashOf(RedisConnection& c, const std::string& key) {
  std::map<std::string, std::string> out;
  auto r = c.command({"HGETALL", key});
  if (replyIsError(r.get())) throw Error(Status::Store, "HGETALL " + key + ": " + cappedText(replyString(r.get())));
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
    out[replyString(r->element[i])] = replyString(r->element[i + 1]);
  }
  return out;
}

}  // namespace

Directory::Directory(const std::string& redis_url, std::string ns, std::chrono::milliseconds timeout)
    : keys_(std::move(ns)) {
  RedisConnector connector(parseRedisUrl(redis_url), timeout);
  conn_ = connector.connect();
  where_ = connector.viaSentinel() ? conn_->url() + " (master of " + connector.url().redacted() + ")"
                                   : connector.url().redacted();
}

Directory::~Directory() = default;

std::vector<std::string> Directory::scan(const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto r = conn_->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      throw Error(Status::Store, "SCAN failed: " + cappedText(replyString(r.get())));
    }
    cursor = replyString(r->element[0]);
    const redisReply* batch = r->element[1];
    for (size_t i = 0; batch && i < batch->elements; ++i) keys.push_back(replyString(batch->element[i]));
  } while (cursor != "0");
  return keys;
}

std::vector<MemberEntry> Directory::members() {
  std::vector<MemberEntry> out;
  const std::string prefix = keys_.heartbeatPrefix();
  for (const auto& key : scan(prefix + "*")) {
    auto v = conn_->command({"GET", key});
    if (!v || v->type != REDIS_REPLY_STRING) continue;  // expired between SCAN and GET
    MemberEntry m{key.substr(prefix.size()), parseHeartbeat(std::string_view(v->str, v->len)), {}};
    auto paths = conn_->command({"GET", keys_.paths(m.id)});
    if (paths && paths->type == REDIS_REPLY_STRING) m.paths = std::string(paths->str, paths->len);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MemberMetrics> Directory::memberMetrics() {
  const std::string prefix = keys_.heartbeatPrefix();
  std::vector<MemberMetrics> out;
  for (const auto& key : scan(prefix + "*")) out.push_back(MemberMetrics{key.substr(prefix.size()), {}, {}});
  for (const auto& m : out) {
    conn_->append({"GET", keys_.heartbeat(m.id)});
    conn_->append({"GET", keys_.metrics(m.id)});
  }
  std::vector<MemberMetrics> live;
  for (auto& m : out) {
    auto hb = conn_->readReply();
    auto value = conn_->readReply();
    if (!hb || hb->type != REDIS_REPLY_STRING) continue;  // expired between SCAN and GET
    m.heartbeat = parseHeartbeat(std::string_view(hb->str, hb->len));
    if (value && value->type == REDIS_REPLY_STRING) m.snapshot = std::string(value->str, value->len);
    live.push_back(std::move(m));
  }
  return live;
}

std::vector<WorldEntry> Directory::worlds() {
  std::vector<WorldEntry> out;
  const std::string meta_prefix = keys_.worldMeta("");  // "<ns>:world:{}"
  const std::string open = meta_prefix.substr(0, meta_prefix.size() - 1);
  for (const auto& key : scan(open + "*}")) {
    auto meta = hashOf(*conn_, key);
    if (meta.empty()) continue;
    WorldEntry w;
    w.name = key.substr(open.size(), key.size() - open.size() - 1);
    w.epoch = parseEpoch(meta["epoch"]);
    w.size = parseWorldSize(meta["size"]);
    w.state = meta["state"];
    w.detail = meta["detail"];
    if (auto created = parseDecimal(meta["created_ms"], 1ULL << 62)) w.created_ms = static_cast<long long>(*created);
    if (meta["how"] == "shrunk" || meta["how"] == "grown") {
      w.how = meta["how"];
      w.from = parseEpoch(meta["from"]);
      w.old_size = parseWorldSize(meta["old_size"]);
      w.excluded = cappedText(meta["excluded"]);
    }
    if (w.epoch) {
      for (auto& [rank, id] : hashOf(*conn_, keys_.worldEpoch(w.name, *w.epoch, "members"))) {
        w.members.emplace_back(rank, id);
      }
      auto broken = conn_->command({"GET", keys_.worldEpoch(w.name, *w.epoch, "broken")});
      w.break_marked = broken && broken->type == REDIS_REPLY_STRING;
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace mw
