// The collectives of the C API on Gloo's algorithms, run on the world's
// worker in issue order.
#pragma once

#include <memory>

#include "core/backends/gloo/gloo_link.h"
#include "core/communicator.h"
#include "core/op.h"

namespace mw {

std::unique_ptr<PendingOp> makeGlooCollective(GlooLink& link, const OpDesc& op);

}  // namespace mw
