#include "tools/multiworld/status.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/keys.h"
#include "core/redis_connection.h"
#include "core/redis_url.h"
#include "core/redis_values.h"

namespace mwcli {
namespace {

using mw::RedisConnection;
using mw::replyString;

long long unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> scan(RedisConnection& c, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto r = c.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) throw mw::Error(mw::Status::Store, "SCAN failed");
    cursor = replyString(r->element[0]);
    const redisReply* batch = r->element[1];
    for (size_t i = 0; batch && i < batch->elements; ++i) keys.push_back(replyString(batch->element[i]));
  } while (cursor != "0");
  return keys;
}

std::map<std::string, std::string> hash(RedisConnection& c, const std::string& key) {
  std::map<std::string, std::string> out;
  auto r = c.command({"HGETALL", key});
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
    out[replyString(r->element[i])] = replyString(r->element[i + 1]);
  }
  return out;
}

std::string ageText(long long ms) {
  char buf[32];
  if (ms < 0) return "?";
  if (ms < 10000) std::snprintf(buf, sizeof buf, "%lld ms", ms);
  else std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

void printOnce(RedisConnection& c, const mw::Keys& keys, const std::string& url) {
  const long long now = unixMs();
  std::printf("redis %s, namespace %s\n\nlive members\n", url.c_str(), keys.ns().c_str());
  std::printf("  %-18s %-16s %-8s %s\n", "id", "host", "pid", "heartbeat age");
  std::map<std::string, bool> alive;
  const std::string hb_prefix = keys.heartbeatPrefix();
  for (const auto& key : scan(c, hb_prefix + "*")) {
    std::string id = key.substr(hb_prefix.size());
    auto v = c.command({"GET", key});
    if (!v || v->type != REDIS_REPLY_STRING) continue;  // expired between SCAN and GET
    auto hb = mw::parseHeartbeat(std::string_view(v->str, v->len));
    alive[id] = true;
    std::printf("  %-18s %-16s %-8s %s\n", mw::cappedText(id).c_str(), hb ? hb->host.c_str() : "?",
                hb ? std::to_string(hb->pid).c_str() : "?", hb ? ageText(now - hb->unix_ms).c_str() : "?");
  }
  if (alive.empty()) std::printf("  (none)\n");

  std::printf("\nworlds\n  %-24s %-6s %-5s %-8s %-10s %s\n", "name", "epoch", "size", "state", "age", "members");
  const std::string meta_prefix = keys.worldMeta("");  // "<ns>:world:{}"
  const std::string open = meta_prefix.substr(0, meta_prefix.size() - 1);
  int shown = 0;
  for (const auto& key : scan(c, open + "*}")) {
    std::string name = key.substr(open.size(), key.size() - open.size() - 1);
    auto meta = hash(c, key);
    if (meta.empty()) continue;
    const std::string epoch = mw::parseEpoch(meta["epoch"]) ? meta["epoch"] : "?";
    std::string state = mw::cappedText(meta["state"]);
    auto members = hash(c, keys.worldEpochBase(name) + epoch + ":members");
    std::string list;
    bool stale = false;
    for (const auto& [rank, id] : members) {
      bool live = alive.count(id) > 0;
      stale = stale || !live;
      list += mw::cappedText(rank) + ":" + mw::cappedText(id.substr(0, 8)) + (live ? "" : "(gone)") + " ";
    }
    auto broken = c.command({"GET", keys.worldEpochBase(name) + epoch + ":broken"});
    if (broken && broken->type == REDIS_REPLY_STRING) state = "BROKEN";
    else if (state == "ready" && stale) state = "STALE";
    long long created = std::atoll(meta["created_ms"].c_str());
    std::printf("  %-24s %-6s %-5s %-8s %-10s %s\n", mw::cappedText(name).c_str(), epoch.c_str(),
                mw::parseWorldSize(meta["size"]) ? meta["size"].c_str() : "?", state.c_str(),
                created > 0 ? ageText(now - created).c_str() : "?", list.c_str());
    if (state == "BROKEN" && !meta["detail"].empty()) {
      std::printf("      why: %s\n", mw::cappedText(meta["detail"]).c_str());
    }
    ++shown;
  }
  if (shown == 0) std::printf("  (none)\n");
  std::fflush(stdout);
}

}  // namespace

int runStatus(const StatusOptions& opt) {
  std::string url = opt.redis_url;
  if (url.empty()) url = getenv("MW_REDIS_URL") ? getenv("MW_REDIS_URL") : "redis://127.0.0.1:6379";
  try {
    mw::RedisUrl parsed = mw::parseRedisUrl(url);
    auto conn = RedisConnection::connect(parsed, std::chrono::milliseconds(2000));
    mw::Keys keys(opt.ns);
    do {
      if (opt.watch) std::printf("\033[H\033[2J");
      printOnce(*conn, keys, parsed.redacted());
      if (opt.watch) std::this_thread::sleep_for(std::chrono::seconds(1));
    } while (opt.watch);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multiworld status: %s\n", e.what());
    return 2;
  }
}

}  // namespace mwcli
