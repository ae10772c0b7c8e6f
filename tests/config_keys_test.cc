// core/config.cc is the one list of config keys: README's table and the
// public header's list name exactly its keys, in its order, so that none
// of the three drifts from the others.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text between the first line starting with `from` and the next line
// starting with `to`.
std::vector<std::string> linesBetween(const std::string& text, const std::string& from, const std::string& to) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.rfind(from, 0) == 0;
      continue;
    }
    if (line.rfind(to, 0) == 0) break;
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> matches(const std::vector<std::string>& lines, const std::regex& re) {
  std::vector<std::string> keys;
  std::smatch m;
  for (const auto& line : lines) {
    if (std::regex_search(line, m, re)) keys.push_back(m[1]);
  }
  return keys;
}

TEST(ConfigKeys, ReadmeTableListsExactlyTheKeysOfConfigCc) {
  const std::string readme = read(MW_SOURCE_DIR "/README.md");
  ASSERT_FALSE(readme.empty());
  const auto rows = linesBetween(readme, "## Configuration keys", "## ");
  EXPECT_EQ(matches(rows, std::regex(R"(^\| `([a-z_]+)` \|)")), mw::Config::keys());
}

TEST(ConfigKeys, HeaderListsExactlyTheKeysOfConfigCc) {
  const std::string header = read(MW_SOURCE_DIR "/capi/include/multiworld/multiworld.h");
  ASSERT_FALSE(header.empty());
  const auto lines = linesBetween(header, "/* ---- configuration", " * Unknown key");
  EXPECT_EQ(matches(lines, std::regex(R"(^ \*   ([a-z_]+) )")), mw::Config::keys());
}

TEST(ConfigKeys, EveryKeyIsTakenAndAnUnknownOneIsNamed) {
  for (const auto& key : mw::Config::keys()) {
    mw::Config c;
    try {
      c.set(key, "");
    } catch (const mw::Error& e) {
      EXPECT_EQ(std::string(e.what()).find("unknown key"), std::string::npos) << key << ": " << e.what();
    }
  }
  mw::Config c;
  try {
    c.set("metrics_listn", "on");
    FAIL() << "an unknown key was taken";
  } catch (const mw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'metrics_listn'"), std::string::npos) << e.what();
  }
}

TEST(ConfigKeys, MetricsKeysCheckTheirValues) {
  mw::Config c;
  EXPECT_TRUE(c.metrics);
  EXPECT_FALSE(c.metrics_world_labels);
  EXPECT_EQ(c.metrics_publish.count(), 10000);
  EXPECT_TRUE(c.metrics_listen.empty());
  c.set("metrics", "off");
  c.set("metrics_world_labels", "on");
  c.set("metrics_publish_ms", "0");
  c.set("metrics_listen", "127.0.0.1:9464");
  c.set("metrics_listen", "[::1]:0");
  EXPECT_FALSE(c.metrics);
  EXPECT_TRUE(c.metrics_world_labels);
  EXPECT_EQ(c.metrics_publish.count(), 0);
  EXPECT_THROW(c.validate(), mw::Error);  // a listener needs metrics on
  for (const auto& [key, bad] : std::vector<std::pair<std::string, std::string>>{
           {"metrics", "yes"},
           {"metrics_world_labels", "1"},
           {"metrics_publish_ms", "50"},
           {"metrics_publish_ms", "-1"},
           {"metrics_listen", "9464"},
           {"metrics_listen", "::1:9464"},
           {"metrics_listen", "host:65536"},
           {"metrics_listen", "a b:1"}}) {
    try {
      c.set(key, bad);
      ADD_FAILURE() << key << "=" << bad << " was taken";
    } catch (const mw::Error& e) {
      EXPECT_EQ(e.status(), mw::Status::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

}  // namespace
