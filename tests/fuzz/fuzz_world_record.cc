// Values of a world's records in Redis: numbers (epochs, sizes, ranks),
// member ids and lists, the join script's reply, the rendezvous token, and
// the capping of any text on its way into a message.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/capped_text.h"
#include "core/store/redis_values.h"

namespace {

void checkCapped(const std::string& text) {
  const std::string out = mw::cappedText(text);
  if (out.size() > mw::kCappedTextBytes + 40) std::abort();
  for (char c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) std::abort();
  }
  if (text.size() <= mw::kCappedTextBytes && out.size() != text.size()) std::abort();
}

void checkNumbers(const std::string& text, uint64_t max) {
  if (auto v = mw::parseDecimal(text, max)) {
    if (*v > max || std::to_string(*v) != text) std::abort();  // only canonical decimals
  }
  if (auto e = mw::parseEpoch(text)) {
    if (*e < 1 || *e > mw::kMaxEpoch) std::abort();
  }
  if (auto s = mw::parseWorldSize(text)) {
    if (*s < 1) std::abort();
    if (auto r = mw::parseRank(text, *s)) std::abort();  // a size is never a rank of itself
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint64_t max = in.ConsumeIntegral<uint64_t>();
  const int rank_bound = in.ConsumeIntegral<int>();
  std::vector<std::string> elements;
  std::vector<std::optional<std::string>> fields;
  while (in.remaining_bytes() > 0 && elements.size() < 8) {
    std::string e = in.ConsumeRandomLengthString(2048);
    if (in.ConsumeBool()) fields.emplace_back(e);
    else fields.emplace_back(std::nullopt);
    elements.push_back(std::move(e));
  }
  for (const auto& e : elements) {
    checkCapped(e);
    checkNumbers(e, max);
    if (auto r = mw::parseRank(e, rank_bound)) {
      if (*r < 0 || *r >= rank_bound) std::abort();
    }
    if (mw::isValidMemberId(e) && (e.empty() || e.size() > 64)) std::abort();
    if (auto token = mw::parseGoToken(e)) {
      if (token->why.size() > mw::kCappedTextBytes + 40) std::abort();
    }
  }
  mw::MemberList list = mw::parseMemberList(fields);
  if (list.bad_rank < 0 ? list.members.size() != fields.size()
                        : (list.bad_rank >= static_cast<int>(fields.size()) || !list.members.empty())) {
    std::abort();
  }
  if (auto reply = mw::parseJoinReply(elements)) {
    for (const std::string* t : {&reply->text, &reply->key, &reply->field, &reply->value}) {
      if (t->size() > mw::kCappedTextBytes + 40) std::abort();
    }
    bool needs_epoch = reply->kind == mw::JoinReply::Kind::Ok || reply->kind == mw::JoinReply::Kind::Taken;
    if (needs_epoch && (reply->epoch < 1 || reply->epoch > mw::kMaxEpoch)) std::abort();
  }
  return 0;
}
