#include "core/store/redis_values.h"

#include <sys/socket.h>

#include <climits>
#include <cstring>

#include "core/capped_text.h"
#include "core/config.h"

namespace mw {
namespace {

constexpr size_t kMaxHostBytes = 255;
constexpr uint64_t kMaxUnixMs = 1ULL << 53;

// Splits at the first `sep`; false when there is none.
bool cutAt(std::string_view text, char sep, std::string_view* head, std::string_view* rest) {
  size_t at = text.find(sep);
  if (at == std::string_view::npos) return false;
  *head = text.substr(0, at);
  *rest = text.substr(at + 1);
  return true;
}

std::optional<int> parsePeerRank(std::string_view text) {
  if (text == "-1") return -1;
  auto v = parseDecimal(text, INT_MAX);
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

bool isHostText(std::string_view host) {
  if (host.empty() || host.size() > kMaxHostBytes) return false;
  for (char c : host) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F) return false;
  }
  return true;
}

}  // namespace

std::optional<uint64_t> parseDecimal(std::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (digit > max || v > (max - digit) / 10) return std::nullopt;  // v * 10 + digit > max
    v = v * 10 + digit;
  }
  return v;
}

std::optional<uint64_t> parseEpoch(std::string_view text) {
  auto v = parseDecimal(text, kMaxEpoch);
  if (!v || *v == 0) return std::nullopt;
  return v;
}

std::optional<int> parseWorldSize(std::string_view text) {
  auto v = parseDecimal(text, INT_MAX);
  if (!v || *v == 0) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<int> parseRank(std::string_view text, int size) {
  if (size <= 0) return std::nullopt;
  auto v = parseDecimal(text, static_cast<uint64_t>(size - 1));
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

bool isValidMemberId(std::string_view id) { return isValidName(std::string(id.substr(0, 65)), 64); }

MemberList parseMemberList(const std::vector<std::optional<std::string>>& fields) {
  MemberList list;
  list.members.reserve(fields.size());
  for (size_t r = 0; r < fields.size(); ++r) {
    if (!fields[r] || !isValidMemberId(*fields[r])) {
      list.members.clear();
      list.bad_rank = static_cast<int>(r);
      return list;
    }
    list.members.push_back(*fields[r]);
  }
  return list;
}

std::string formatHeartbeat(const Heartbeat& hb) {
  return std::to_string(hb.beat) + " " + hb.host + " " + std::to_string(hb.pid) + " " + std::to_string(hb.unix_ms);
}

std::optional<Heartbeat> parseHeartbeat(std::string_view text) {
  std::string_view beat, host, pid, ms;
  std::string_view rest;
  if (!cutAt(text, ' ', &beat, &rest) || !cutAt(rest, ' ', &host, &rest) || !cutAt(rest, ' ', &pid, &ms)) {
    return std::nullopt;
  }
  Heartbeat hb;
  auto b = parseDecimal(beat, UINT64_MAX);
  auto p = parseDecimal(pid, INT_MAX);
  auto m = parseDecimal(ms, kMaxUnixMs);
  if (!b || !p || !m || !isHostText(host)) return std::nullopt;
  hb.beat = *b;
  hb.host = std::string(host);
  hb.pid = static_cast<long long>(*p);
  hb.unix_ms = static_cast<long long>(*m);
  return hb;
}

std::string formatBreakMarker(const BreakMarker& m) {
  return std::to_string(m.peer) + "\n" + std::to_string(m.detector) + "\n" + m.detail;
}

std::string formatBreakNotice(const BreakNotice& n) {
  return n.world + "\n" + std::to_string(n.epoch) + "\n" + formatBreakMarker(n.marker);
}

std::optional<BreakMarker> parseBreakMarker(std::string_view text) {
  std::string_view peer, detector, detail;
  std::string_view rest;
  if (!cutAt(text, '\n', &peer, &rest)) return std::nullopt;
  if (!cutAt(rest, '\n', &detector, &detail)) {
    detector = rest;  // a marker without a detail
    detail = {};
  }
  auto p = parsePeerRank(peer);
  auto d = parseDecimal(detector, INT_MAX);
  if (!p || !d) return std::nullopt;
  return BreakMarker{*p, static_cast<int>(*d), cappedText(detail)};
}

std::optional<BreakNotice> parseBreakNotice(std::string_view text) {
  std::string_view world, epoch, marker;
  std::string_view rest;
  if (!cutAt(text, '\n', &world, &rest) || !cutAt(rest, '\n', &epoch, &marker)) return std::nullopt;
  if (!isValidName(std::string(world.substr(0, 129)), 128)) return std::nullopt;
  auto e = parseEpoch(epoch);
  auto m = parseBreakMarker(marker);
  if (!e || !m) return std::nullopt;
  return BreakNotice{std::string(world), *e, std::move(*m)};
}

std::optional<ExclusionNotice> parseExclusionNotice(std::string_view text) {
  constexpr std::string_view kHead = "!excluded\n";
  if (text.substr(0, kHead.size()) != kHead) return std::nullopt;
  text.remove_prefix(kHead.size());
  std::string_view world, old_epoch, new_epoch, ranks, rest;
  if (!cutAt(text, '\n', &world, &rest) || !cutAt(rest, '\n', &old_epoch, &text) ||
      !cutAt(text, '\n', &new_epoch, &ranks)) {
    return std::nullopt;
  }
  if (!isValidName(std::string(world.substr(0, 129)), 128)) return std::nullopt;
  auto o = parseEpoch(old_epoch);
  auto n = parseEpoch(new_epoch);
  if (!o || !n || *n <= *o || ranks.size() > 1024) return std::nullopt;
  return ExclusionNotice{std::string(world), *o, *n, std::string(ranks)};
}

std::optional<JoinReply> parseJoinReply(const std::vector<std::string>& elements) {
  if (elements.empty()) return std::nullopt;
  const std::string& kind = elements[0];
  JoinReply r;
  if (kind == "ok" && elements.size() == 2) {
    auto e = parseEpoch(elements[1]);
    if (!e) return std::nullopt;
    r.kind = JoinReply::Kind::Ok;
    r.epoch = *e;
  } else if ((kind == "size" || kind == "resizing") && elements.size() == 2) {
    r.kind = kind == "size" ? JoinReply::Kind::SizeMismatch : JoinReply::Kind::Resizing;
    r.text = cappedText(elements[1]);
  } else if (kind == "taken" && elements.size() == 3) {
    auto e = parseEpoch(elements[2]);
    if (!e) return std::nullopt;
    r.kind = JoinReply::Kind::Taken;
    r.text = cappedText(elements[1]);
    r.epoch = *e;
  } else if (kind == "corrupt" && elements.size() == 4) {
    r.kind = JoinReply::Kind::Corrupt;
    r.key = cappedText(elements[1]);
    r.field = cappedText(elements[2]);
    r.value = cappedText(elements[3]);
  } else {
    return std::nullopt;
  }
  return r;
}

std::optional<GoToken> parseGoToken(std::string_view text) {
  if (text == "ok") return GoToken{true, ""};
  if (text.substr(0, 4) == "err:") return GoToken{false, cappedText(text.substr(4))};
  return std::nullopt;
}

std::optional<std::vector<char>> addressEntry(const std::vector<char>& list, int peer, int rank, int size) {
  if (size < 2 || peer < 0 || peer >= size || rank < 0 || rank >= size || peer == rank) return std::nullopt;
  const size_t others = static_cast<size_t>(size - 1);
  if (list.empty() || list.size() % others != 0) return std::nullopt;
  const size_t each = list.size() / others;
  const size_t index = static_cast<size_t>(rank > peer ? rank - 1 : rank);
  auto first = list.begin() + static_cast<std::ptrdiff_t>(index * each);
  return std::vector<char>(first, first + static_cast<std::ptrdiff_t>(each));
}

std::string addressListProblem(const std::vector<char>& list, int size, size_t entry_bytes) {
  const size_t others = size > 1 ? static_cast<size_t>(size - 1) : 0;
  if (others == 0 || entry_bytes < sizeof(sockaddr_storage) || list.size() != others * entry_bytes) {
    return std::to_string(list.size()) + " bytes, not " + std::to_string(others) + " addresses of " +
           std::to_string(entry_bytes) + " bytes";
  }
  for (size_t i = 0; i < others; ++i) {
    sockaddr_storage ss;
    std::memcpy(&ss, list.data() + i * entry_bytes, sizeof ss);
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) {
      return "address " + std::to_string(i) + " of family " + std::to_string(ss.ss_family) + ", not IPv4 or IPv6";
    }
  }
  return "";
}

}  // namespace mw
