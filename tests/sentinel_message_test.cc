// What a sentinel announces on +switch-master, parsed with bounds like
// everything else read from the network.
#include "core/store/sentinel.h"

#include <gtest/gtest.h>

#include <string>

namespace mw {
namespace {

TEST(SentinelMessage, SwitchOfOurMasterNamesTheNewOne) {
  auto at = parseSwitchMaster("mymaster 127.0.0.1 6379 127.0.0.1 6380", "mymaster");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->host, "127.0.0.1");
  EXPECT_EQ(at->port, 6380);
  at = parseSwitchMaster("m ::1 1 fe80::1%eth0 7000", "m");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->text(), "[fe80::1%eth0]:7000");
}

TEST(SentinelMessage, AnythingElseIsIgnored) {
  EXPECT_FALSE(parseSwitchMaster("other 127.0.0.1 6379 127.0.0.1 6380", "mymaster"));
  for (const char* bad : {"", "mymaster", "mymaster 127.0.0.1 6379 127.0.0.1", "mymaster a 1 b 0",
                          "mymaster a 1 b 65536", "mymaster a 1 b -1", "mymaster a 1 b 80x",
                          "mymaster a 1 b 80 extra", "mymaster a 1 b/c 80", "mymaster a 1 b 0080000"}) {
    EXPECT_FALSE(parseSwitchMaster(bad, "mymaster")) << bad;
  }
  EXPECT_FALSE(parseSwitchMaster("mymaster a 1 " + std::string(300, 'h') + " 80", "mymaster"));
  EXPECT_FALSE(parseSwitchMaster(std::string(5000, ' ') + "mymaster a 1 b 80", "mymaster"));
}

}  // namespace
}  // namespace mw
