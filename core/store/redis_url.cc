#include "core/store/redis_url.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace mw {

namespace {

constexpr int kMaxDb = 1 << 20;  // exclusive
constexpr size_t kMaxSentinels = 16;
constexpr size_t kMaxMasterName = 128;
constexpr int kSentinelPort = 26379;

[[noreturn]] void bad(const std::string& url, const std::string& why) {
  throw Error(Status::InvalidArgument,
              "bad redis_url '" + redactRedisUrlString(url) + "': " + why);
}

bool startsWithNoCase(const std::string& s, const char* prefix) {
  size_t i = 0;
  for (; prefix[i] != '\0'; ++i) {
    if (i >= s.size()) return false;
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Returns false on a malformed escape.
bool percentDecode(const std::string& in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;  // fewer than two chars follow
    int hi = hexValue(in[i + 1]);
    int lo = hexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string percentEncodeUserinfo(const std::string& in) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : in) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// Parses a non-empty string of decimal digits into [lo, hi]. Returns false
// when it is empty, has a non-digit, or is out of range.
bool parseBoundedInt(const std::string& s, long lo, long hi, int* out) {
  if (s.empty()) return false;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
    if (v > hi) return false;
  }
  if (v < lo) return false;
  *out = static_cast<int>(v);
  return true;
}

bool allDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

void parseDb(const std::string& url, const std::string& s, int* db) {
  if (!allDigits(s)) bad(url, "db must be a non-negative integer");
  if (!parseBoundedInt(s, 0, kMaxDb - 1, db))
    bad(url, "db out of range 0.." + std::to_string(kMaxDb - 1));
}

void parseUserinfo(const std::string& url, const std::string& info,
                   RedisUrl* out) {
  size_t colon = info.find(':');
  std::string rawUser = info.substr(0, colon);
  if (!percentDecode(rawUser, &out->user))
    bad(url, "invalid percent-encoding in user name");
  if (colon != std::string::npos) {
    if (!percentDecode(info.substr(colon + 1), &out->password))
      bad(url, "invalid percent-encoding in password");
  }
}

bool validHostChar(char ch) {
  unsigned char c = static_cast<unsigned char>(ch);
  return std::isalnum(c) || c == '-' || c == '.' || c == '_';
}

// Address part: hex digits, ':' and '.'; an optional zone id after '%'.
bool validIpv6(const std::string& h) {
  if (h.find(':') == std::string::npos) return false;
  size_t pct = h.find('%');
  for (size_t i = 0; i < h.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(h[i]);
    if (i == pct) continue;
    if (pct != std::string::npos && i > pct) {
      if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
    } else if (!std::isxdigit(c) && c != ':' && c != '.') {
      return false;
    }
  }
  return pct == std::string::npos || pct + 1 < h.size();
}

// text = host[:port], host an IPv6 address in brackets or a name.
void parseHostPort(const std::string& url, const std::string& text, HostPort* out) {
  std::string portPart;
  bool havePort = false;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) bad(url, "unterminated '[' in host");
    out->host = text.substr(1, close - 1);
    if (out->host.empty()) bad(url, "empty host");
    if (!validIpv6(out->host)) bad(url, "invalid IPv6 address in host");
    std::string after = text.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad(url, "unexpected characters after ']'");
      portPart = after.substr(1);
      havePort = true;
    }
  } else {
    size_t colon = text.find(':');
    out->host = text.substr(0, colon);
    if (colon != std::string::npos) {
      portPart = text.substr(colon + 1);
      havePort = true;
    }
    if (out->host.empty()) bad(url, "empty host");
    for (char c : out->host)
      if (!validHostChar(c)) bad(url, "invalid character in host");
  }
  if (havePort) {
    if (!allDigits(portPart)) bad(url, "port must be numeric");
    if (!parseBoundedInt(portPart, 1, 65535, &out->port))
      bad(url, "port out of range 1..65535");
  }
}

// rest = [userinfo@]authority[/path]: the userinfo goes to `out`, the
// authority and the path (without its '/') are returned.
std::pair<std::string, std::string> splitUserinfo(const std::string& url, const std::string& rest, bool* havePath,
                                                  RedisUrl* out) {
  std::string authority = rest;
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    parseUserinfo(url, rest.substr(0, at), out);
    authority = rest.substr(at + 1);
  }
  std::string path;
  size_t slash = authority.find('/');
  *havePath = slash != std::string::npos;
  if (*havePath) {
    path = authority.substr(slash + 1);
    authority.resize(slash);
  }
  return {authority, path};
}

void parseTcp(const std::string& url, const std::string& rest,
              RedisUrl* out) {
  // rest = [userinfo@]host[:port][/db]
  bool haveDbPart = false;
  auto [hostport, dbPart] = splitUserinfo(url, rest, &haveDbPart, out);
  if (hostport.find_first_of("?#") != std::string::npos)
    bad(url, "unexpected characters after host");
  HostPort hp{out->host, out->port};
  parseHostPort(url, hostport, &hp);
  out->host = hp.host;
  out->port = hp.port;
  if (haveDbPart) {
    if (dbPart.find_first_of("?#") != std::string::npos)
      bad(url, "unexpected characters after db");
    if (!dbPart.empty()) parseDb(url, dbPart, &out->db);  // "host/" = db 0
  }
}

bool validMasterName(const std::string& name) {
  if (name.empty() || name.size() > kMaxMasterName) return false;
  for (char c : name)
    if (!validHostChar(c)) return false;
  return true;
}

void parseSentinel(const std::string& url, const std::string& rest, RedisUrl* out) {
  // rest = [userinfo@]host[:port][,host[:port]...]/MASTER_NAME[/db]
  bool havePath = false;
  auto [hosts, path] = splitUserinfo(url, rest, &havePath, out);
  if (hosts.find_first_of("?#") != std::string::npos || path.find_first_of("?#") != std::string::npos)
    bad(url, "unexpected '?' or '#'");
  for (size_t start = 0;;) {
    size_t comma = hosts.find(',', start);
    std::string one = hosts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (one.empty()) bad(url, "empty sentinel address");
    if (out->sentinels.size() == kMaxSentinels)
      bad(url, "more than " + std::to_string(kMaxSentinels) + " sentinels");
    HostPort hp{"", kSentinelPort};
    parseHostPort(url, one, &hp);
    out->sentinels.push_back(hp);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!havePath || path.empty())
    bad(url, "no master name (redis+sentinel://host:26379[,host:port...]/MASTER_NAME[/db])");
  size_t slash = path.find('/');
  out->master_name = path.substr(0, slash);
  if (!validMasterName(out->master_name))
    bad(url, "master name must be 1.." + std::to_string(kMaxMasterName) + " chars of [A-Za-z0-9._-]");
  if (slash != std::string::npos && slash + 1 < path.size()) parseDb(url, path.substr(slash + 1), &out->db);
  out->host.clear();
  out->port = 0;
}

void parseUnix(const std::string& url, const std::string& rest,
               RedisUrl* out) {
  // rest = [userinfo@]/path[?db=N]
  std::string pathQuery = rest;
  if (rest.empty() || rest[0] != '/') {
    size_t slash = rest.find('/');
    std::string authority =
        rest.substr(0, slash == std::string::npos ? rest.size() : slash);
    if (authority.empty() || authority.back() != '@')
      bad(url, "unix socket URL must be unix:///absolute/path");
    authority.pop_back();
    parseUserinfo(url, authority, out);
    pathQuery = slash == std::string::npos ? std::string() : rest.substr(slash);
  }
  size_t q = pathQuery.find('?');
  out->path = pathQuery.substr(0, q);
  if (out->path.empty()) bad(url, "empty unix socket path");
  if (out->path.back() == '/') bad(url, "unix socket path names a directory");
  if (out->path.find('#') != std::string::npos)
    bad(url, "unexpected '#' in unix socket path");
  if (q != std::string::npos) {
    std::string query = pathQuery.substr(q + 1);
    if (query.compare(0, 3, "db=") != 0)
      bad(url, "unsupported query (only ?db=N is accepted)");
    parseDb(url, query.substr(3), &out->db);
  }
  out->host.clear();
  out->port = 0;
}

}  // namespace

std::string redactRedisUrlString(const std::string& url) {
  size_t sep = url.find("://");
  size_t start = sep == std::string::npos ? 0 : sep + 3;
  size_t at = url.rfind('@');
  if (at == std::string::npos || at < start) return url;
  size_t colon = url.find(':', start);
  if (colon != std::string::npos && colon < at)
    return url.substr(0, colon + 1) + "***" + url.substr(at);
  if (sep == std::string::npos) return "***" + url.substr(at);
  return url;  // user name only: nothing secret
}

std::string HostPort::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

RedisUrl RedisUrl::master(const HostPort& at) const {
  RedisUrl m = *this;
  m.kind = Kind::Tcp;
  m.host = at.host;
  m.port = at.port;
  m.sentinels.clear();
  m.master_name.clear();
  return m;
}

std::string RedisUrl::redacted() const {
  std::string userinfo;
  if (!user.empty() || !password.empty()) {
    userinfo = percentEncodeUserinfo(user);
    if (!password.empty()) userinfo += ":***";
    userinfo += "@";
  }
  if (kind == Kind::Unix) {
    std::string s = "unix://" + userinfo + path;
    if (db != 0) s += "?db=" + std::to_string(db);
    return s;
  }
  if (kind == Kind::Sentinel) {
    std::string s = "redis+sentinel://" + userinfo;
    for (size_t i = 0; i < sentinels.size(); ++i) s += (i ? "," : "") + sentinels[i].text();
    s += "/" + master_name;
    if (db != 0) s += "/" + std::to_string(db);
    return s;
  }
  std::string s = "redis://" + userinfo + HostPort{host, port}.text();
  if (db != 0) s += "/" + std::to_string(db);
  return s;
}

RedisUrl parseRedisUrl(const std::string& url) {
  if (url.empty()) bad(url, "empty");
  if (url.find('\0') != std::string::npos) bad(url, "contains a NUL byte");
  for (char ch : url) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == ' ')
      bad(url, "contains whitespace or control characters");
  }
  RedisUrl out;
  if (startsWithNoCase(url, "redis://")) {
    out.kind = RedisUrl::Kind::Tcp;
    parseTcp(url, url.substr(8), &out);
  } else if (startsWithNoCase(url, "unix://")) {
    out.kind = RedisUrl::Kind::Unix;
    parseUnix(url, url.substr(7), &out);
  } else if (startsWithNoCase(url, "redis+sentinel://")) {
    out.kind = RedisUrl::Kind::Sentinel;
    parseSentinel(url, url.substr(17), &out);
  } else {
    bad(url, "unsupported scheme (expected redis://, unix:// or redis+sentinel://)");
  }
  return out;
}

}  // namespace mw
