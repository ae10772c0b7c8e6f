// Text from Redis on its way into errors, events and logs.
#include <gtest/gtest.h>

#include "core/capped_text.h"

namespace {

using mw::cappedText;
using mw::kCappedTextBytes;

TEST(CappedText, ShortTextOnlyLosesControlCharacters) {
  EXPECT_EQ(cappedText("rank 1\nleft\x7f"), "rank 1 left ");
  EXPECT_EQ(cappedText(std::string(kCappedTextBytes, 'a')), std::string(kCappedTextBytes, 'a'));
}

TEST(CappedText, LongTextIsCutWithinTheCapAndSaysSo) {
  const std::string out = cappedText(std::string(10 << 20, 'x'));
  EXPECT_LE(out.size(), kCappedTextBytes);
  EXPECT_NE(out.find("...[cut, 10485760 bytes]"), std::string::npos) << out;
}

TEST(CappedText, NeverSplitsAUtf8Character) {
  std::string text;
  while (text.size() < 2 * kCappedTextBytes) text += "\xc3\xa9";  // é
  const std::string out = cappedText(text);
  const std::string kept = out.substr(0, out.find("..."));
  EXPECT_EQ(kept.size() % 2, 0u);
}

// A notice passed on is capped again: that must not cut a cut text (found
// by fuzz_break_notice).
TEST(CappedText, CappingTwiceChangesNothing) {
  for (size_t n : {kCappedTextBytes - 1, kCappedTextBytes, kCappedTextBytes + 1, kCappedTextBytes + 37,
                   size_t{1061}, size_t{1} << 20}) {
    const std::string once = cappedText(std::string(n, '\xff'));
    EXPECT_EQ(cappedText(once), once) << n;
  }
}

}  // namespace
