#include "core/backends/nccl/nccl_plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace mw {
namespace {

// Set by CMake from the project's major version: a plugin of another major
// version has another file name and is never picked up.
constexpr const char* kSoname = MW_NCCL_PLUGIN_SONAME;

std::string directoryOfThisModule() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&directoryOfThisModule), &info) == 0 || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

// Never unloaded: CUDA and NCCL keep threads and driver state that must
// not lose their code under them.
const mwn_plugin* open(const std::string& path, std::string& error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = e ? e : path + ": cannot be loaded";
    return nullptr;
  }
  auto entry = reinterpret_cast<mwn_entry_fn>(dlsym(h, MW_NCCL_PLUGIN_ENTRY));
  if (!entry) {
    error = path + " has no " MW_NCCL_PLUGIN_ENTRY;
    return nullptr;
  }
  const mwn_plugin* table = entry();
  if (!table || table->abi != MW_NCCL_PLUGIN_ABI) {
    error = path + " speaks plugin ABI " + std::to_string(table ? table->abi : 0) + ", this library " +
            std::to_string(MW_NCCL_PLUGIN_ABI);
    return nullptr;
  }
  return table;
}

NcclSupport load() {
  NcclSupport s;
  std::vector<std::string> tried;
  const char* forced = std::getenv("MW_NCCL_PLUGIN");
  std::vector<std::string> candidates;
  if (forced && *forced) {
    candidates.push_back(forced);
  } else {
    std::string here = directoryOfThisModule();
    if (!here.empty()) candidates.push_back(here + kSoname);
    candidates.push_back(kSoname);  // LD_LIBRARY_PATH, the cache, the system directories
  }
  for (const auto& c : candidates) {
    std::string error;
    s.plugin = open(c, error);
    if (s.plugin) break;
    tried.push_back(error);
  }
  if (!s.plugin) {
    s.why_not = std::string("no NCCL plugin (") + kSoname + ") could be loaded";
    if (forced && *forced) s.why_not += " from MW_NCCL_PLUGIN";
    for (const auto& t : tried) s.why_not += "; " + t;
    return s;
  }
  char err[512] = "";
  int st = s.plugin->probe(&s.devices, err, sizeof err);
  if (st != MWN_OK) s.why_not = err[0] ? err : "the NCCL plugin found no usable CUDA device";
  // The plugin looks ncclCommShrink and ncclCommGrow up in the loaded NCCL
  // now, at load, rather than in the middle of a member's first resize.
  if (s.plugin->resize_support) s.plugin->resize_support();
  return s;
}

}  // namespace

const NcclSupport& ncclSupport() {
  static const NcclSupport support = load();
  return support;
}

}  // namespace mw
