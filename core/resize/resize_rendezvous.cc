#include "core/resize/resize_rendezvous.h"

#include <chrono>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/resize/resize_scripts.h"
#include "core/store/redis_values.h"

namespace mw {
namespace {

long long nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> elementsOf(const redisReply* r) {
  std::vector<std::string> out;
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) out.push_back(replyString(r->element[i]));
  return out;
}

// The replies both scripts share; returns for the ones that are theirs.
void throwCommon(const std::string& where, const std::vector<std::string>& v) {
  if (v.size() == 3 && v[0] == "gone") {
    throw Error(Status::Store, where + ": the world moved on (its record in Redis is at epoch " + cappedText(v[1]) +
                                   ", " + cappedText(v[2]) + "); this handle's epoch can no longer be resized");
  }
  if (v.size() == 3 && v[0] == "taken") {
    throw Error(Status::AlreadyExists, where + ": the rank this member takes in epoch " + cappedText(v[2]) +
                                           " is claimed by live member " + cappedText(v[1]));
  }
  if (v.size() == 4 && v[0] == "corrupt") {
    const std::string key = "Redis key " + cappedText(v[1]);
    if (v[2].empty()) throw Error(Status::Store, where + ": " + key + " holds " + cappedText(v[3]));
    throw Error(Status::Store, where + ": " + key + " field '" + cappedText(v[2]) + "' holds '" + cappedText(v[3]) +
                                   "', not a valid value");
  }
}

std::string listText(const std::vector<int>& ranks) { return describeRanks(ranks); }

}  // namespace

ResizeClaim ResizeRendezvous::claimShrink(const std::string& world, uint64_t old_epoch, int old_size, int old_rank,
                                          const std::optional<std::vector<int>>& proposal,
                                          const std::vector<int>& seen_blamed, std::optional<int> broken_by,
                                          Deadline deadline) {
  const std::string where = "shrink of world '" + world + "' epoch " + std::to_string(old_epoch);
  const Keys& keys = rv_.keys();
  const auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = rv_.pool().lease();
  auto reply = conn->command({"EVAL", scripts::shrinkClaim(), "1", keys.worldMeta(world), std::to_string(old_epoch),
                              std::to_string(old_size), std::to_string(old_rank), rv_.member(),
                              proposal ? encodeRanks(*proposal) : "", encodeRanks(seen_blamed),
                              std::to_string(ttl.count()), std::to_string(nowUnixMs()), keys.worldEpochBase(world),
                              keys.heartbeatPrefix(), keys.eventsChannel(), world,
                              broken_by ? std::to_string(*broken_by) : ""});
  if (replyIsError(reply.get())) throw Error(Status::Store, where + ": " + cappedText(replyString(reply.get())));
  const std::vector<std::string> v = elementsOf(reply.get());
  throwCommon(where, v);
  auto agreed = [&](const std::string& text) {
    auto ranks = decodeRanks(text, old_size);
    if (!ranks) throw Error(Status::Store, where + ": Redis holds '" + cappedText(text) + "', not a list of ranks");
    return *ranks;
  };
  if (v.size() == 3 && v[0] == "differs") {
    throw Error(Status::InvalidArgument, where + ": this member's exclude list " + listText(*proposal) +
                                             " differs from " + listText(agreed(v[1])) +
                                             ", the one the first survivor fixed for epoch " + cappedText(v[2]));
  }
  if (v.size() == 3 && v[0] == "excluded") {
    throw Error(Status::WorldBroken, where + ": rank " + std::to_string(old_rank) + " is excluded by the shrink to epoch " +
                                         cappedText(v[2]) + " (excluded: " + listText(agreed(v[1])) + ")");
  }
  if (v.size() == 2 && v[0] == "notready") {
    throw Error(Status::InvalidArgument,
                where + ": the world is broken" +
                    (*broken_by >= 0 ? " (its break named rank " + std::to_string(*broken_by) + ")" : std::string()) +
                    " and the shrink's list " + listText(agreed(v[1])) +
                    " does not exclude that: MW_SHRINK_DEFAULT needs a ready world (or one broken by a member the "
                    "shrink excludes); MW_SHRINK_ABORT shrinks a broken one");
  }
  if (v.size() == 1 && v[0] == "nothing") {
    throw Error(Status::InvalidArgument, where + ": exclude is NULL but the world's break named no member; " +
                                             "pass the ranks to exclude");
  }
  if (v.size() == 2 && v[0] == "everyone") {
    throw Error(Status::InvalidArgument, where + ": the break named every rank " + listText(agreed(v[1])) +
                                             ": nobody would be left");
  }
  if (v.size() != 4 || v[0] != "ok") throw Error(Status::Store, where + ": malformed reply from Redis to the claim");
  auto epoch = parseEpoch(v[1]);
  auto new_rank = parseRank(v[3], old_size);
  if (!epoch || !new_rank) throw Error(Status::Store, where + ": malformed reply from Redis to the claim");
  ResizeClaim c;
  c.epoch = *epoch;
  c.plan = shrinkPlan(old_size, old_rank, agreed(v[2]));
  if (c.plan.new_rank != *new_rank) throw Error(Status::Store, where + ": Redis numbered this member differently");
  return c;
}

ResizeClaim ResizeRendezvous::claimGrow(const std::string& world, uint64_t old_epoch, int old_size, int rank,
                                        int new_size, int max_world_size, Deadline deadline) {
  const std::string where = "grow of world '" + world + "' epoch " + std::to_string(old_epoch);
  ResizeClaim c;
  c.plan = growPlan(old_size, rank, new_size, max_world_size);
  const Keys& keys = rv_.keys();
  const auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = rv_.pool().lease();
  auto reply = conn->command({"EVAL", scripts::growClaim(), "1", keys.worldMeta(world), std::to_string(old_epoch),
                              std::to_string(old_size), std::to_string(rank), rv_.member(), std::to_string(new_size),
                              std::to_string(ttl.count()), std::to_string(nowUnixMs()), keys.worldEpochBase(world),
                              keys.heartbeatPrefix()});
  if (replyIsError(reply.get())) throw Error(Status::Store, where + ": " + cappedText(replyString(reply.get())));
  const std::vector<std::string> v = elementsOf(reply.get());
  throwCommon(where, v);
  if (v.size() == 2 && v[0] == "size") throw Error(Status::InvalidArgument, where + ": " + cappedText(v[1]));
  auto epoch = v.size() == 2 && v[0] == "ok" ? parseEpoch(v[1]) : std::nullopt;
  if (!epoch) throw Error(Status::Store, where + ": malformed reply from Redis to the claim");
  c.epoch = *epoch;
  return c;
}

}  // namespace mw
