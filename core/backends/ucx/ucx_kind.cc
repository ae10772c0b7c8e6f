// UCX's entry in the table of backends (core/backend_registry.h).
#include "core/backend_registry.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/error.h"

namespace mw {
namespace {

class UcxKind : public BackendKind {
 public:
  Backend id() const override { return Backend::Ucx; }
  bool available() const noexcept override { return ucxUsable(); }
  void require(const WorldSpec& spec) const override {
    if (!ucxUsable()) {
      throw Error(Status::Unsupported, "world '" + spec.name + "': the UCX backend cannot start here (ucp_init failed)");
    }
  }
  void prepare(BackendServices& s) const override { s.ucx(); }
  std::unique_ptr<WorldBackend> connect(BackendServices& s, const Incarnation& inc, int rank, const WorldSpec&,
                                        const WorldSettings& settings, Deadline deadline) const override {
    return UcxWorld::connect(s.ucx(), s.pool(), inc, rank, inc.size(), settings, deadline);
  }
};

}  // namespace

const BackendKind& ucxBackend() {
  static const UcxKind kind;
  return kind;
}

}  // namespace mw
