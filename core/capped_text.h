// Text that came from Redis (or from a peer through it) on its way into an
// error message, an event or a log line. Anyone who can write to the
// namespace chooses that text, so it is capped and made printable: a 10 MB
// value must not become a 10 MB mw_last_error, nor a forged log line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mw {

constexpr size_t kCappedTextBytes = 1024;

// `text` with control characters replaced by spaces; when longer than
// kCappedTextBytes, its start (never splitting a UTF-8 character) and
// "...[cut, N bytes]", kCappedTextBytes in all at most. Capping twice
// changes nothing.
std::string cappedText(std::string_view text);

}  // namespace mw
