#include "core/resize/resize_plan.h"

#include <algorithm>

#include "core/error.h"

namespace mw {

const char* resizeVerb(ResizeKind k) { return k == ResizeKind::Shrink ? "shrink" : "grow"; }

int ResizePlan::oldRankOf(int r) const {
  for (int old = 0; old < old_size; ++old) {
    if (new_rank_of[static_cast<size_t>(old)] == r) return old;
  }
  return -1;
}

std::vector<int> checkedExcludeList(const int* ranks, int n, int size, int self) {
  if (n < 0) throw Error(Status::InvalidArgument, "exclude count n " + std::to_string(n) + " must be >= 0");
  if (n > 0 && !ranks) {
    throw Error(Status::InvalidArgument, "exclude is NULL but n is " + std::to_string(n) +
                                             " (NULL with n = 0 excludes the members the break named)");
  }
  std::vector<int> out;
  out.reserve(static_cast<size_t>(std::min(n, size)));
  std::vector<bool> seen(static_cast<size_t>(size), false);
  for (int i = 0; i < n; ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= size) {
      throw Error(Status::InvalidArgument, "exclude[" + std::to_string(i) + "] = " + std::to_string(r) +
                                               " is outside [0, " + std::to_string(size) + ")");
    }
    if (seen[static_cast<size_t>(r)]) {
      throw Error(Status::InvalidArgument, "exclude[" + std::to_string(i) + "] = " + std::to_string(r) +
                                               " is listed twice");
    }
    if (r == self) {
      throw Error(Status::InvalidArgument, "exclude[" + std::to_string(i) + "] = " + std::to_string(r) +
                                               " is this member's own rank: a member cannot shrink itself out");
    }
    seen[static_cast<size_t>(r)] = true;
    out.push_back(r);
  }
  // Never reached with `self` in range, which the list never holds; said
  // anyway for a caller that passes every other rank and itself.
  if (!out.empty() && static_cast<int>(out.size()) >= size) {
    throw Error(Status::InvalidArgument, "exclude " + describeRanks(out) + " names every rank of the world");
  }
  std::sort(out.begin(), out.end());
  return out;
}

ResizePlan shrinkPlan(int old_size, int old_rank, const std::vector<int>& excluded) {
  ResizePlan p;
  p.kind = ResizeKind::Shrink;
  p.old_size = old_size;
  p.old_rank = old_rank;
  p.excluded = excluded;
  p.new_rank_of.assign(static_cast<size_t>(old_size), -1);
  int next = 0;
  size_t x = 0;
  for (int old = 0; old < old_size; ++old) {
    if (x < excluded.size() && excluded[x] == old) {
      ++x;
      continue;
    }
    p.new_rank_of[static_cast<size_t>(old)] = next++;
  }
  p.new_size = next;
  p.new_rank = old_rank >= 0 && old_rank < old_size ? p.new_rank_of[static_cast<size_t>(old_rank)] : -1;
  return p;
}

ResizePlan growPlan(int old_size, int old_rank, int new_size, int max_world_size) {
  if (new_size <= old_size) {
    throw Error(Status::InvalidArgument, "new_size " + std::to_string(new_size) +
                                             " must be above the world's size " + std::to_string(old_size));
  }
  if (new_size > max_world_size) {
    throw Error(Status::InvalidArgument, "new_size " + std::to_string(new_size) + " exceeds max_world_size " +
                                             std::to_string(max_world_size));
  }
  ResizePlan p;
  p.kind = ResizeKind::Grow;
  p.old_size = old_size;
  p.new_size = new_size;
  p.old_rank = old_rank;
  p.new_rank = old_rank;
  p.new_rank_of.resize(static_cast<size_t>(old_size));
  for (int old = 0; old < old_size; ++old) p.new_rank_of[static_cast<size_t>(old)] = old;
  return p;
}

std::string describeRanks(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

std::string encodeRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

std::optional<std::vector<int>> decodeRanks(const std::string& text, int size) {
  std::vector<int> out;
  if (text.empty()) return out;
  long long v = -1;
  bool digits = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c >= '0' && c <= '9') {
      if (digits && v == 0) return std::nullopt;  // a leading zero: not the form encodeRanks writes
      v = (digits ? v : 0) * 10 + (c - '0');
      digits = true;
      if (v >= size) return std::nullopt;
      continue;
    }
    if (c != ',' || !digits) return std::nullopt;
    if (!out.empty() && v <= out.back()) return std::nullopt;
    out.push_back(static_cast<int>(v));
    digits = false;
    if (out.size() > static_cast<size_t>(size)) return std::nullopt;
  }
  return out;
}

}  // namespace mw
