#include "core/store/sentinel.h"

#include <cctype>
#include <sstream>
#include <vector>

#include "core/capped_text.h"
#include "core/error.h"

namespace mw {
namespace {

constexpr const char* kSwitchChannel = "+switch-master";

RedisUrl sentinelUrl(const HostPort& s) {
  RedisUrl u;
  u.kind = RedisUrl::Kind::Tcp;
  u.host = s.host;
  u.port = s.port;
  return u;
}

bool isNoAuth(const redisReply* r) {
  return replyIsError(r) && replyString(r).rfind("NOAUTH", 0) == 0;
}

// One command to a sentinel; AUTH with the URL's credentials and once more
// when it demands them.
RedisReply askSentinel(RedisConnection& conn, const RedisUrl& url, const std::vector<std::string>& cmd) {
  auto r = conn.command(cmd);
  if (!isNoAuth(r.get()) || url.password.empty()) return r;
  std::vector<std::string> auth{"AUTH"};
  if (!url.user.empty()) auth.push_back(url.user);
  auth.push_back(url.password);
  auto a = conn.command(auth);
  if (replyIsError(a.get())) throw Error(Status::Store, "AUTH failed: " + cappedText(replyString(a.get())));
  return conn.command(cmd);
}

bool parsePort(const std::string& text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 65535) return false;
  *port = v;
  return true;
}

bool validAddressText(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '-' || c == '_' || c == '%'))
      return false;
  }
  return true;
}

// Where the sentinel behind `conn` says the master is; throws Error(Store)
// saying why not.
HostPort masterNamedBy(RedisConnection& conn, const RedisUrl& url) {
  auto r = askSentinel(conn, url, {"SENTINEL", "get-master-addr-by-name", url.master_name});
  if (r && r->type == REDIS_REPLY_NIL) throw Error(Status::Store, "knows no master named '" + url.master_name + "'");
  if (replyIsError(r.get())) throw Error(Status::Store, cappedText(replyString(r.get())));
  HostPort at;
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !validAddressText(replyString(r->element[0])) ||
      !parsePort(replyString(r->element[1]), &at.port)) {
    throw Error(Status::Store, "answered get-master-addr-by-name with something that is not an address");
  }
  at.host = replyString(r->element[0]);
  return at;
}

void requireMaster(RedisConnection& conn) {
  auto r = conn.command({"ROLE"});
  if (replyIsError(r.get())) {
    throw Error(Status::Store, "redis " + conn.url() + ": ROLE: " + cappedText(replyString(r.get())));
  }
  std::string role = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? replyString(r->element[0]) : "";
  if (role != "master") {
    throw Error(Status::Store, "redis " + conn.url() + " is " +
                                   (role.empty() ? std::string("of no known role") : "a " + cappedText(role)) +
                                   ", not a master");
  }
}

}  // namespace

std::unique_ptr<RedisConnection> connectToMaster(const RedisUrl& url, std::chrono::milliseconds timeout) {
  std::string why;
  for (const auto& s : url.sentinels) {
    HostPort at;
    try {
      auto sentinel = RedisConnection::connect(sentinelUrl(s), timeout);
      at = masterNamedBy(*sentinel, url);
    } catch (const Error& e) {
      why += "; sentinel " + s.text() + ": " + e.what();
      continue;
    }
    try {
      auto conn = RedisConnection::connect(url.master(at), timeout);
      requireMaster(*conn);
      return conn;
    } catch (const Error& e) {
      why += "; sentinel " + s.text() + " names master " + at.text() + ": " + e.what();
    }
  }
  throw Error(Status::Store, "no master '" + url.master_name + "' found through " + url.redacted() + why);
}

std::unique_ptr<SentinelWatch> SentinelWatch::open(const RedisUrl& url, std::chrono::milliseconds timeout) {
  std::string why;
  for (const auto& s : url.sentinels) {
    try {
      auto conn = RedisConnection::connect(sentinelUrl(s), timeout);
      auto r = askSentinel(*conn, url, {"SUBSCRIBE", kSwitchChannel});
      if (!r || replyIsError(r.get())) {
        throw Error(Status::Store, "SUBSCRIBE " + std::string(kSwitchChannel) + ": " +
                                       cappedText(replyString(r.get())));
      }
      return std::unique_ptr<SentinelWatch>(new SentinelWatch(std::move(conn), url.master_name));
    } catch (const Error& e) {
      why += "; sentinel " + s.text() + ": " + e.what();
    }
  }
  throw Error(Status::Store, "no sentinel of " + url.redacted() + " to watch" + why);
}

std::optional<HostPort> SentinelWatch::switched() {
  std::optional<HostPort> to;
  for (auto& reply : conn_->readAvailable()) {
    const redisReply* r = reply.get();
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) continue;
    if (replyString(r->element[0]) != "message" || replyString(r->element[1]) != kSwitchChannel) continue;
    if (auto at = parseSwitchMaster(replyString(r->element[2]), master_name_)) to = at;
  }
  return to;
}

std::optional<HostPort> parseSwitchMaster(const std::string& text, const std::string& master_name) {
  if (text.size() > 1024) return std::nullopt;
  std::istringstream in(text);
  std::string name, old_host, old_port, new_host, new_port, extra;
  if (!(in >> name >> old_host >> old_port >> new_host >> new_port) || (in >> extra)) return std::nullopt;
  HostPort at;
  if (name != master_name || !validAddressText(new_host) || !parsePort(new_port, &at.port)) return std::nullopt;
  at.host = new_host;
  return at;
}

}  // namespace mw
