#include "core/store/redis_url.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace mw {
namespace {

using Kind = RedisUrl::Kind;

// Expects parseRedisUrl(url) to throw InvalidArgument; returns the message.
std::string parseError(const std::string& url) {
  try {
    parseRedisUrl(url);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::InvalidArgument) << url;
    return e.what();
  }
  ADD_FAILURE() << "no error for '" << url << "'";
  return "";
}

TEST(RedisUrl, HostOnly) {
  RedisUrl u = parseRedisUrl("redis://example.com");
  EXPECT_EQ(u.kind, Kind::Tcp);
  EXPECT_EQ(u.host, "example.com");
  EXPECT_EQ(u.port, 6379);
  EXPECT_EQ(u.db, 0);
  EXPECT_TRUE(u.user.empty());
  EXPECT_TRUE(u.password.empty());
}

TEST(RedisUrl, HostPort) {
  RedisUrl u = parseRedisUrl("redis://10.0.0.5:7000");
  EXPECT_EQ(u.host, "10.0.0.5");
  EXPECT_EQ(u.port, 7000);
  EXPECT_EQ(u.db, 0);
}

TEST(RedisUrl, HostPortDb) {
  RedisUrl u = parseRedisUrl("redis://localhost:6380/5");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 5);
}

TEST(RedisUrl, HostDbWithoutPort) {
  RedisUrl u = parseRedisUrl("redis://localhost/7");
  EXPECT_EQ(u.port, 6379);
  EXPECT_EQ(u.db, 7);
}

TEST(RedisUrl, TrailingSlashMeansDbZero) {
  RedisUrl u = parseRedisUrl("redis://localhost:6379/");
  EXPECT_EQ(u.db, 0);
}

TEST(RedisUrl, LegacyPassword) {
  RedisUrl u = parseRedisUrl("redis://:pw@host:1234");
  EXPECT_TRUE(u.user.empty());
  EXPECT_EQ(u.password, "pw");
  EXPECT_EQ(u.host, "host");
  EXPECT_EQ(u.port, 1234);
}

TEST(RedisUrl, UserPasswordDb) {
  RedisUrl u = parseRedisUrl("redis://alice:pw@host:1234/3");
  EXPECT_EQ(u.user, "alice");
  EXPECT_EQ(u.password, "pw");
  EXPECT_EQ(u.host, "host");
  EXPECT_EQ(u.port, 1234);
  EXPECT_EQ(u.db, 3);
}

TEST(RedisUrl, UserOnly) {
  RedisUrl u = parseRedisUrl("redis://bob@host");
  EXPECT_EQ(u.user, "bob");
  EXPECT_TRUE(u.password.empty());
}

TEST(RedisUrl, PercentDecoding) {
  RedisUrl u = parseRedisUrl("redis://us%40er:p%40ss%3Aw%2Fd%25@host:1/2");
  EXPECT_EQ(u.user, "us@er");
  EXPECT_EQ(u.password, "p@ss:w/d%");
  EXPECT_EQ(u.host, "host");
  EXPECT_EQ(u.port, 1);
  EXPECT_EQ(u.db, 2);
}

TEST(RedisUrl, UnencodedAtInPasswordUsesLastAt) {
  RedisUrl u = parseRedisUrl("redis://:a@b@host:6379");
  EXPECT_EQ(u.password, "a@b");
  EXPECT_EQ(u.host, "host");
}

TEST(RedisUrl, Ipv6) {
  RedisUrl u = parseRedisUrl("redis://[::1]:6379");
  EXPECT_EQ(u.kind, Kind::Tcp);
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 6379);
  RedisUrl v = parseRedisUrl("redis://:pw@[fe80::1%eth0]/4");
  EXPECT_EQ(v.host, "fe80::1%eth0");
  EXPECT_EQ(v.port, 6379);
  EXPECT_EQ(v.db, 4);
  EXPECT_EQ(v.password, "pw");
}

TEST(RedisUrl, PortBounds) {
  EXPECT_EQ(parseRedisUrl("redis://h:1").port, 1);
  EXPECT_EQ(parseRedisUrl("redis://h:65535").port, 65535);
  parseError("redis://h:0");
  parseError("redis://h:65536");
  parseError("redis://h:99999999999999999999");
  parseError("redis://h:-1");
  parseError("redis://h:abc");
  parseError("redis://h:12x");
  parseError("redis://h:");
  parseError("redis://[::1]:");
  parseError("redis://[::1]:0");
}

TEST(RedisUrl, DbBounds) {
  EXPECT_EQ(parseRedisUrl("redis://h/0").db, 0);
  EXPECT_EQ(parseRedisUrl("redis://h/1048575").db, (1 << 20) - 1);
  parseError("redis://h/1048576");
  parseError("redis://h/-1");
  parseError("redis://h/x");
  parseError("redis://h/1x");
  parseError("redis://h/99999999999999999999999");
  parseError("unix:///s.sock?db=-1");
  parseError("unix:///s.sock?db=abc");
  parseError("unix:///s.sock?db=1048576");
  parseError("unix:///s.sock?db=");
}

TEST(RedisUrl, Unix) {
  RedisUrl u = parseRedisUrl("unix:///path/to.sock");
  EXPECT_EQ(u.kind, Kind::Unix);
  EXPECT_EQ(u.path, "/path/to.sock");
  EXPECT_EQ(u.db, 0);
  RedisUrl v = parseRedisUrl("unix:///path/to.sock?db=2");
  EXPECT_EQ(v.path, "/path/to.sock");
  EXPECT_EQ(v.db, 2);
}

TEST(RedisUrl, UnixWithPassword) {
  RedisUrl u = parseRedisUrl("unix://:s%40cret@/tmp/r.sock?db=1");
  EXPECT_EQ(u.kind, Kind::Unix);
  EXPECT_EQ(u.password, "s@cret");
  EXPECT_TRUE(u.user.empty());
  EXPECT_EQ(u.path, "/tmp/r.sock");
  EXPECT_EQ(u.db, 1);
  RedisUrl v = parseRedisUrl("unix://default:pw@/tmp/r.sock");
  EXPECT_EQ(v.user, "default");
  EXPECT_EQ(v.password, "pw");
}

TEST(RedisUrl, Sentinel) {
  RedisUrl u = parseRedisUrl("redis+sentinel://u:p%40ss@10.0.0.1:26380,sentinel-b,[::1]:5000/mymaster/4");
  EXPECT_EQ(u.kind, Kind::Sentinel);
  ASSERT_EQ(u.sentinels.size(), 3u);
  EXPECT_EQ(u.sentinels[0].host, "10.0.0.1");
  EXPECT_EQ(u.sentinels[0].port, 26380);
  EXPECT_EQ(u.sentinels[1].host, "sentinel-b");
  EXPECT_EQ(u.sentinels[1].port, 26379);  // the sentinel port by default
  EXPECT_EQ(u.sentinels[2].host, "::1");
  EXPECT_EQ(u.sentinels[2].port, 5000);
  EXPECT_EQ(u.master_name, "mymaster");
  EXPECT_EQ(u.user, "u");
  EXPECT_EQ(u.password, "p@ss");
  EXPECT_EQ(u.db, 4);
  EXPECT_EQ(parseRedisUrl("redis+sentinel://h/m").db, 0);
  EXPECT_EQ(parseRedisUrl("redis+sentinel://h/m/").db, 0);
  EXPECT_EQ(parseRedisUrl("REDIS+SENTINEL://h/m").master_name, "m");
}

TEST(RedisUrl, SentinelMasterKeepsCredentialsAndDb) {
  RedisUrl m = parseRedisUrl("redis+sentinel://u:pw@h1,h2/mymaster/2").master(HostPort{"10.1.2.3", 6390});
  EXPECT_EQ(m.kind, Kind::Tcp);
  EXPECT_EQ(m.host, "10.1.2.3");
  EXPECT_EQ(m.port, 6390);
  EXPECT_EQ(m.user, "u");
  EXPECT_EQ(m.password, "pw");
  EXPECT_EQ(m.db, 2);
  EXPECT_EQ(m.redacted(), "redis://u:***@10.1.2.3:6390/2");
}

TEST(RedisUrl, SentinelRejects) {
  EXPECT_NE(parseError("redis+sentinel://h:26379").find("no master name"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h:26379/").find("no master name"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel:///m").find("empty sentinel address"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://a,,b/m").find("empty sentinel address"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://a,/m").find("empty sentinel address"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h/m*x").find("master name"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h/" + std::string(129, 'm')).find("master name"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h:0/m").find("port"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h/m/x").find("db"), std::string::npos);
  EXPECT_NE(parseError("redis+sentinel://h/m/1/2").find("db"), std::string::npos);
  parseError("redis+sentinel://h/m?db=1");
  parseError("redis+sentinel://[::1/m");
  std::string many = "redis+sentinel://";
  for (int i = 0; i < 17; ++i) many += (i ? ",h" : "h") + std::to_string(i);
  EXPECT_NE(parseError(many + "/m").find("more than 16 sentinels"), std::string::npos);
  EXPECT_EQ(parseError("redis+sentinel://:hunter2@h").find("hunter2"), std::string::npos);
}

TEST(RedisUrl, SchemeIsCaseInsensitive) {
  EXPECT_EQ(parseRedisUrl("REDIS://h").host, "h");
  EXPECT_EQ(parseRedisUrl("Unix:///x").path, "/x");
}

TEST(RedisUrl, Rejects) {
  parseError("");
  parseError("redis://");
  parseError("redis://:6379");
  parseError("redis://:pw@:6379");
  parseError("redis://:pw@");
  parseError("http://host:6379");
  parseError("rediss://host:6379");
  parseError("host:6379");
  parseError("redis:/host");
  parseError("unix://");
  parseError("unix://?db=1");
  parseError("unix:///");
  parseError("unix:///tmp/?db=1");
  parseError("unix://host/path.sock");
  parseError("unix:///s.sock?foo=1");
  parseError("unix:///s.sock?db=1&x=2");
  parseError("redis://host:6379/0/extra");
  parseError("redis://host:6379?db=1");
  parseError("redis://host:6379#frag");
  parseError("redis://host name");
  parseError("redis://ho\tst");
  parseError(std::string("redis://host\0x", 14));
  parseError("redis://[::1");
  parseError("redis://[]:6379");
  parseError("redis://[::1]x");
  parseError("redis://[nothex]:1");
  parseError("redis://a:b:c");
  parseError("redis://%zz@host");
  parseError("redis://:%4@host");
  parseError("redis://:%@host");
}

TEST(RedisUrl, ErrorMessageFormat) {
  std::string msg = parseError("http://x");
  EXPECT_EQ(msg.rfind("bad redis_url 'http://x': ", 0), 0u) << msg;
}

TEST(RedisUrl, ErrorMessagesNeverLeakPassword) {
  const char* cases[] = {
      "redis://:hunter2@host:0",
      "redis://user:hunter2@host:abc",
      "redis://user:hunter2@host/-1",
      "redis://user:hunter2@@",
      "redis://:hunter2%zz@host",
      "redis://:hunter2@[::1",
      "redis://:hunter2@host/1/2",
      "http://u:hunter2@host",
      "unix://:hunter2@/x.sock?db=x",
      "unix://:hunter2@",
      "unix://:hunter2@/",
      "hunter2@host",
      "redis://:hunter2@:hunter2@",
  };
  for (const char* url : cases) {
    std::string msg = parseError(url);
    EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bad redis_url"), std::string::npos) << msg;
  }
}

TEST(RedisUrl, Redacted) {
  EXPECT_EQ(parseRedisUrl("redis://h").redacted(), "redis://h:6379");
  EXPECT_EQ(parseRedisUrl("redis://u:hunter2@h:1/3").redacted(),
            "redis://u:***@h:1/3");
  EXPECT_EQ(parseRedisUrl("redis://:hunter2@h").redacted(),
            "redis://:***@h:6379");
  EXPECT_EQ(parseRedisUrl("redis://bob@h").redacted(), "redis://bob@h:6379");
  EXPECT_EQ(parseRedisUrl("redis://[::1]:7/2").redacted(),
            "redis://[::1]:7/2");
  EXPECT_EQ(parseRedisUrl("unix:///a/b.sock?db=2").redacted(),
            "unix:///a/b.sock?db=2");
  EXPECT_EQ(parseRedisUrl("unix://:hunter2@/a/b.sock").redacted(),
            "unix://:***@/a/b.sock");
  EXPECT_EQ(parseRedisUrl("redis://u%40x:p%40ss@h").redacted(),
            "redis://u%40x:***@h:6379");
  EXPECT_EQ(parseRedisUrl("redis+sentinel://:hunter2@a,[::1]:7/m/3").redacted(),
            "redis+sentinel://:***@a:26379,[::1]:7/m/3");
}

TEST(RedisUrl, RedactedRoundTrips) {
  for (const char* url : {"redis://h:1/3", "redis://[::1]:6379", "unix:///a/b.sock?db=2", "redis://u%40x@h:5",
                          "redis+sentinel://u@a:1,b/m/2"}) {
    RedisUrl a = parseRedisUrl(url);
    RedisUrl b = parseRedisUrl(a.redacted());
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.port, b.port);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.user, b.user);
    EXPECT_EQ(a.db, b.db);
    EXPECT_EQ(a.master_name, b.master_name);
    ASSERT_EQ(a.sentinels.size(), b.sentinels.size());
    for (size_t i = 0; i < a.sentinels.size(); ++i) EXPECT_EQ(a.sentinels[i].text(), b.sentinels[i].text());
  }
}

TEST(RedisUrl, RedactedNeverLeaksPassword) {
  for (const char* url :
       {"redis://:hunter2@h", "redis://u:hunter2@h:1/2",
        "unix://:hunter2@/x.sock", "redis://:hun%74er2@h",
        "redis://hunter2:hunter2x@h"}) {
    RedisUrl u = parseRedisUrl(url);
    std::string r = u.redacted();
    EXPECT_EQ(r.find(u.password), std::string::npos) << r;
  }
}

}  // namespace
}  // namespace mw
