// Parsing of the `redis_url` setting into the pieces hiredis needs.
//
// Accepted forms:
//   redis://host                       redis://host:port
//   redis://host:port/db               redis://:password@host:port
//   redis://user:password@host:port/3  redis://[::1]:6379
//   unix:///path/to.sock               unix:///path/to.sock?db=2
//   unix://:password@/path/to.sock     (userinfo is optional for unix too)
// User name and password are percent-decoded (%40 -> '@').
#pragma once

#include <string>

namespace mw {

struct RedisUrl {
  enum class Kind { Tcp, Unix } kind = Kind::Tcp;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;            // unix socket path
  std::string user, password;  // empty = none; user empty + password set = legacy AUTH
  int db = 0;

  // The URL with the password replaced by "***", for messages.
  std::string redacted() const;
};

// Throws Error(InvalidArgument, "bad redis_url '<url>': <why>"), where <url>
// has any password replaced by "***".
RedisUrl parseRedisUrl(const std::string& url);

// Best-effort redaction of a raw (possibly malformed) URL string: whatever
// follows the first ':' of the userinfo part is replaced by "***".
std::string redactRedisUrlString(const std::string& url);

}  // namespace mw
