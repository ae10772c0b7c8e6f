#include "core/backend_registry.h"

namespace mw {
namespace {

struct Entry {
  const BackendKind& (*kind)();
  const char* c_name;
};

// The one list of backends.
constexpr Entry kBackends[] = {
    {glooBackend, "MW_BACKEND_GLOO"},
    {ncclBackend, "MW_BACKEND_NCCL"},
    {ucxBackend, "MW_BACKEND_UCX"},
};

}  // namespace

const BackendKind* backendKind(Backend b) noexcept {
  for (const Entry& e : kBackends) {
    if (e.kind().id() == b) return &e.kind();
  }
  return nullptr;
}

std::string backendChoices() {
  std::string s;
  const size_t n = sizeof kBackends / sizeof kBackends[0];
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) s += i + 1 == n ? " or " : ", ";
    s += std::string(kBackends[i].c_name) + " (" + std::to_string(static_cast<int>(kBackends[i].kind().id())) + ")";
  }
  return s;
}

}  // namespace mw
