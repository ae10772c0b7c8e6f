// NCCL's entry in the table of backends (core/backend_registry.h). The
// members of an NCCL world also hold a UCX world of their own, carrying no
// data: their liveness link.
#include "core/backend_registry.h"
#include "core/backends/nccl/nccl_plugin_loader.h"
#include "core/backends/nccl/nccl_world.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_world.h"
#include "core/error.h"

namespace mw {
namespace {

class NcclKind : public BackendKind {
 public:
  Backend id() const override { return Backend::Nccl; }
  bool available() const noexcept override { return ncclSupport().usable() && ucxUsable(); }
  void require(const WorldSpec& spec) const override {
    if (!ucxUsable()) {
      throw Error(Status::Unsupported, "world '" + spec.name +
                                           "': NCCL worlds keep their members connected over UCX, and UCX cannot "
                                           "start here (ucp_init failed)");
    }
    // Before any rendezvous, so that a host without NCCL fails at once and
    // says why instead of making the other members wait.
    const NcclSupport& nccl = ncclSupport();
    if (!nccl.usable()) {
      throw Error(Status::Unsupported,
                  "world '" + spec.name + "': the NCCL backend is unavailable here: " + nccl.why_not);
    }
    if (spec.device < 0 || spec.device >= nccl.devices) {
      throw Error(Status::InvalidArgument, "world '" + spec.name + "': device " + std::to_string(spec.device) +
                                               " is outside the " + std::to_string(nccl.devices) +
                                               " CUDA devices of this process [0, " + std::to_string(nccl.devices) +
                                               ")");
    }
  }
  void prepare(BackendServices& s) const override { s.ucx(); }
  std::unique_ptr<WorldBackend> connect(BackendServices& s, const Incarnation& inc, int rank, const WorldSpec& spec,
                                        const WorldSettings& settings, Deadline deadline) const override {
    return NcclWorld::connect(s.ncclThreads(), UcxWorld::connect(s.ucx(), s.pool(), inc, rank, inc.size(),
                                                                 ncclControlSettings(settings), deadline),
                              s.pool(), inc, rank, spec.device, deadline);
  }
};

}  // namespace

const BackendKind& ncclBackend() {
  static const NcclKind kind;
  return kind;
}

}  // namespace mw
