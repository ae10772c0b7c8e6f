// The values the library reads back from Redis, parsed with bounds.
//
// Redis is shared, and anyone who can write to a namespace can put anything
// under its keys (README, "Security"). Each parser accepts the form the
// library itself writes and returns std::nullopt for anything else; the
// caller turns that into MW_ERR_STORE naming the key. Text that ends up in
// messages is capped (core/capped_text.h). Pure functions, so that
// tests/fuzz can drive them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mw {

// Epochs stay exact in the doubles of Redis's Lua (and print without an
// exponent there): at most 15 digits.
constexpr uint64_t kMaxEpoch = 999999999999999ULL;

// Digits only (no sign, space, or leading zero but in "0"),
// value <= max.
std::optional<uint64_t> parseDecimal(std::string_view text, uint64_t max);
std::optional<uint64_t> parseEpoch(std::string_view text);  // 1..kMaxEpoch
std::optional<int> parseWorldSize(std::string_view text);   // 1..INT_MAX
std::optional<int> parseRank(std::string_view text, int size);  // 0..size-1

// Member ids name heartbeat keys: 1..64 chars of [A-Za-z0-9._:-].
bool isValidMemberId(std::string_view id);

// The member list of one epoch as read for ranks 0..n-1 (HMGET): complete
// when every entry is present and a valid member id; otherwise bad_rank is
// the first rank that is not.
struct MemberList {
  std::vector<std::string> members;
  int bad_rank = -1;
};
MemberList parseMemberList(const std::vector<std::optional<std::string>>& fields);

// A heartbeat value: "<beat> <host> <pid> <unix ms>". The beat counts the
// refreshes of one member, so a new value is one with a larger beat.
struct Heartbeat {
  uint64_t beat = 0;
  std::string host;
  long long pid = 0;
  long long unix_ms = 0;
};
std::string formatHeartbeat(const Heartbeat& hb);
std::optional<Heartbeat> parseHeartbeat(std::string_view text);

// A break marker, the durable record of a break:
// "<blamed rank or -1>\n<detecting rank>\n<detail>". A break notice, sent on
// the namespace's events channel: "<world>\n<epoch>\n<marker>". The parsed
// detail is capped for messages.
struct BreakMarker {
  int peer = -1;
  int detector = 0;
  std::string detail;
};
struct BreakNotice {
  std::string world;
  uint64_t epoch = 0;
  BreakMarker marker;
};
std::string formatBreakMarker(const BreakMarker& m);
std::string formatBreakNotice(const BreakNotice& n);
std::optional<BreakMarker> parseBreakMarker(std::string_view text);
std::optional<BreakNotice> parseBreakNotice(std::string_view text);

// A shrink's exclusion notice on the same channel (written by its Lua
// script, core/resize/resize_scripts.h):
// "!excluded\n<world>\n<old epoch>\n<new epoch>\n<ranks, as 1,3>". It
// starts with a '!', which no world name holds, so it is never read as a
// break notice. The ranks are left as text (capped), for decodeRanks.
struct ExclusionNotice {
  std::string world;
  uint64_t old_epoch = 0;
  uint64_t new_epoch = 0;
  std::string ranks;
};
std::optional<ExclusionNotice> parseExclusionNotice(std::string_view text);

// The rendezvous join script's reply (core/store/rendezvous.cc), element by
// element: {"ok", epoch} | {"size", message} | {"taken", holder, epoch} |
// {"resizing", message} | {"corrupt", key, field, value}.
struct JoinReply {
  enum class Kind { Ok, SizeMismatch, Taken, Resizing, Corrupt } kind = Kind::Ok;
  uint64_t epoch = 0;  // Ok, Taken
  std::string text;    // SizeMismatch, Resizing: the message; Taken: the holder
  std::string key, field, value;  // Corrupt: where, and what was found there
};
std::optional<JoinReply> parseJoinReply(const std::vector<std::string>& elements);

// The token that releases the members of a forming epoch: "ok", or
// "err:<why>" when the epoch cannot form.
struct GoToken {
  bool ok = false;
  std::string why;  // capped
};
std::optional<GoToken> parseGoToken(std::string_view text);

// An address list read for a peer: one equal-sized entry for each of the
// other size-1 ranks, in rank order (Gloo's full-mesh exchange). The entry
// meant for `rank`, or nullopt when the list cannot be split that way.
std::optional<std::vector<char>> addressEntry(const std::vector<char>& list, int peer, int rank, int size);
// Why `list` is not such a list of `entry_bytes` entries that each begin
// with an IPv4 or IPv6 socket address (a sockaddr_storage); "" when it is.
std::string addressListProblem(const std::vector<char>& list, int size, size_t entry_bytes);

}  // namespace mw
