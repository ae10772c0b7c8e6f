#include "core/capped_text.h"

namespace mw {

std::string cappedText(std::string_view text) {
  size_t keep = text.size();
  if (keep > kCappedTextBytes) {
    keep = kCappedTextBytes;
    // Back off to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
    for (int i = 0; i < 3 && keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80; ++i) --keep;
  }
  std::string out(text.substr(0, keep));
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = ' ';
  }
  if (keep < text.size()) out += "...[cut, " + std::to_string(text.size()) + " bytes]";
  return out;
}

}  // namespace mw
