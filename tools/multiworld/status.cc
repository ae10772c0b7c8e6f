#include "tools/multiworld/status.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "core/capped_text.h"
#include "core/store/directory.h"

namespace mwcli {
namespace {

long long unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ageText(long long ms) {
  char buf[32];
  if (ms < 0) return "?";
  if (ms < 10000) std::snprintf(buf, sizeof buf, "%lld ms", ms);
  else std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

void printOnce(mw::Directory& dir) {
  const long long now = unixMs();
  std::printf("redis %s, namespace %s\n\nlive members\n", dir.where().c_str(), dir.ns().c_str());
  std::printf("  %-18s %-16s %-8s %s\n", "id", "host", "pid", "heartbeat age");
  std::set<std::string> alive;
  for (const auto& m : dir.members()) {
    alive.insert(m.id);
    const auto& hb = m.heartbeat;
    std::printf("  %-18s %-16s %-8s %s\n", mw::cappedText(m.id).c_str(), hb ? mw::cappedText(hb->host).c_str() : "?",
                hb ? std::to_string(hb->pid).c_str() : "?", hb ? ageText(now - hb->unix_ms).c_str() : "?");
    if (!m.paths.empty()) std::printf("      paths: %s\n", mw::cappedText(m.paths).c_str());
  }
  if (alive.empty()) std::printf("  (none)\n");

  std::printf("\nworlds\n  %-24s %-13s %-5s %-8s %-10s %s\n", "name", "epoch", "size", "state", "age", "members");
  int shown = 0;
  for (const auto& w : dir.worlds()) {
    std::string list;
    bool stale = false;
    for (const auto& [rank, id] : w.members) {
      bool live = alive.count(id) > 0;
      stale = stale || !live;
      list += mw::cappedText(rank) + ":" + mw::cappedText(id.substr(0, 8)) + (live ? "" : "(gone)") + " ";
    }
    std::string state = mw::cappedText(w.state);
    if (w.break_marked) state = "BROKEN";
    else if (state == "ready" && stale) state = "STALE";
    std::printf("  %-24s %-13s %-5s %-8s %-10s %s\n", mw::cappedText(w.name).c_str(),
                w.epoch ? std::to_string(*w.epoch).c_str() : "?", w.size ? std::to_string(*w.size).c_str() : "?",
                state.c_str(), w.created_ms > 0 ? ageText(now - w.created_ms).c_str() : "?", list.c_str());
    if (state == "BROKEN" && !w.detail.empty()) std::printf("      why: %s\n", mw::cappedText(w.detail).c_str());
    std::string lineage = "epoch " + (w.epoch ? std::to_string(*w.epoch) : std::string("?")) + " " + w.how;
    if (w.how != "formed") {
      lineage += " from epoch " + (w.from ? std::to_string(*w.from) : std::string("?")) + " of " +
                 (w.old_size ? std::to_string(*w.old_size) : std::string("?")) + " members";
      if (w.how == "shrunk") lineage += ", excluding rank(s) " + (w.excluded.empty() ? "none" : w.excluded);
    }
    std::printf("      lineage: %s\n", lineage.c_str());
    ++shown;
  }
  if (shown == 0) std::printf("  (none)\n");
  std::fflush(stdout);
}

}  // namespace

int runStatus(const StatusOptions& opt) {
  std::string url = opt.redis_url;
  if (url.empty()) url = getenv("MW_REDIS_URL") ? getenv("MW_REDIS_URL") : "redis://127.0.0.1:6379";
  try {
    mw::Directory dir(url, opt.ns, std::chrono::milliseconds(2000));
    do {
      if (opt.watch) std::printf("\033[H\033[2J");
      printOnce(dir);
      if (opt.watch) std::this_thread::sleep_for(std::chrono::seconds(1));
    } while (opt.watch);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multiworld status: %s\n", e.what());
    return 2;
  }
}

}  // namespace mwcli
