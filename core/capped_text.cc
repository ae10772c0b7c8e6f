#include "core/capped_text.h"

namespace mw {

std::string cappedText(std::string_view text) {
  size_t keep = text.size();
  std::string cut;
  if (keep > kCappedTextBytes) {
    // The whole result stays within the cap, so capping it again (a notice
    // passed on) changes nothing.
    cut = "...[cut, " + std::to_string(text.size()) + " bytes]";
    keep = kCappedTextBytes - cut.size();
    // Back off to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
    for (int i = 0; i < 3 && keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80; ++i) --keep;
  }
  std::string out(text.substr(0, keep));
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = ' ';
  }
  out += cut;
  return out;
}

}  // namespace mw
