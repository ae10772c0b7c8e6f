// Gloo's entry in the table of backends (core/backend_registry.h). A Gloo
// world keeps nothing across a shrink or grow: its successor connects its
// pairs afresh, as a create does.
#include "core/backend_registry.h"
#include "core/backends/gloo/gloo_communicator.h"
#include "core/lanes.h"
#include "core/store/incarnation.h"

namespace mw {
namespace {

class GlooKind : public BackendKind {
 public:
  Backend id() const override { return Backend::Gloo; }
  bool available() const noexcept override { return true; }
  void require(const WorldSpec&) const override {}
  std::unique_ptr<WorldBackend> connect(BackendServices& s, const Incarnation& inc, int rank, const WorldSpec&,
                                        const WorldSettings&, Deadline deadline) const override {
    return std::make_unique<LaneBackend>(
        GlooCommunicator::connect(s.glooDevice(), s.pool(), inc, rank, inc.size(), deadline));
  }
};

}  // namespace

const BackendKind& glooBackend() {
  static const GlooKind kind;
  return kind;
}

}  // namespace mw
