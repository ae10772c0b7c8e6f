// Parsing of the `redis_url` setting into the pieces hiredis needs.
//
// Accepted forms:
//   redis://host                       redis://host:port
//   redis://host:port/db               redis://:password@host:port
//   redis://user:password@host:port/3  redis://[::1]:6379
//   unix:///path/to.sock               unix:///path/to.sock?db=2
//   unix://:password@/path/to.sock     (userinfo is optional for unix too)
//   redis+sentinel://[user:password@]host1:26379,host2:26379[,...]/MASTER_NAME[/db]
//                                      (the master the sentinels name;
//                                      a sentinel's port defaults to 26379)
// User name and password are percent-decoded (%40 -> '@'). With sentinels
// they are the master's; sentinels are asked without them unless one
// demands them (core/store/sentinel.h).
#pragma once

#include <string>
#include <vector>

namespace mw {

struct HostPort {
  std::string host;
  int port = 0;
  // host:port, an IPv6 host in brackets.
  std::string text() const;
};

struct RedisUrl {
  enum class Kind { Tcp, Unix, Sentinel } kind = Kind::Tcp;
  std::string host = "127.0.0.1";  // Tcp
  int port = 6379;
  std::string path;            // Unix: the socket's path
  std::vector<HostPort> sentinels;  // Sentinel: asked in this order
  std::string master_name;          // Sentinel: the master they watch
  std::string user, password;  // empty = none; user empty + password set = legacy AUTH
  int db = 0;

  // The URL with the password replaced by "***", for messages.
  std::string redacted() const;
  // A sentinel URL's master at `at`: a Tcp URL with these credentials and db.
  RedisUrl master(const HostPort& at) const;
};

// Throws Error(InvalidArgument, "bad redis_url '<url>': <why>"), where <url>
// has any password replaced by "***".
RedisUrl parseRedisUrl(const std::string& url);

// Best-effort redaction of a raw (possibly malformed) URL string: whatever
// follows the first ':' of the userinfo part is replaced by "***".
std::string redactRedisUrlString(const std::string& url);

}  // namespace mw
