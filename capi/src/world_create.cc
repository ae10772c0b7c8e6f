// mw_world_create_with, and mw_world_create as its wrapper: the caller's
// parameters struct read at its size, then handed to the context.
#include <cstddef>

#include "capi/src/boundary.h"
#include "capi/src/sized_struct.h"

using namespace mw;
using namespace mw::capi;

namespace {

// Every field up to and including timeout_ms: the first version's size.
constexpr size_t kParamsFirstSize = offsetof(mw_world_params_t, timeout_ms) + sizeof(int);
// MW_VERSION_CODE of the first header with mw_world_params_t.
constexpr uint32_t kParamsFirstVersion = 200;

mw_status_t createWith(mw_context_t* c, const mw_world_params_t* params, mw_world_t** out) {
  return guarded([&] {
    requireNonNull(c, "ctx");
    requireNonNull(params, "params");
    requireNonNull(out, "out");
    *out = nullptr;
    mw_world_params_t p;
    readSized(&p, sizeof p, params, params->size, kParamsFirstSize, "mw_world_params_t");
    if (p.magic != MW_WORLD_PARAMS_MAGIC || p.version < kParamsFirstVersion) {
      throw Error(Status::InvalidArgument, "mw_world_params_t magic " + std::to_string(p.magic) + " version " +
                                               std::to_string(p.version) +
                                               ": not made from MW_WORLD_PARAMS_INIT (magic " +
                                               std::to_string(MW_WORLD_PARAMS_MAGIC) + ", version >= " +
                                               std::to_string(kParamsFirstVersion) + ")");
    }
    requireNonNull(p.name, "mw_world_params_t name");
    WorldSpec spec;
    spec.name = p.name;
    spec.rank = p.rank;
    spec.size = p.world_size;
    spec.backend = static_cast<Backend>(enumValue(p.backend));
    spec.device = p.device;
    spec.timeout_ms = p.timeout_ms;
    spec.op_timeout_ms = p.op_timeout_ms;
    spec.path_failover = pathFailoverFrom(enumValue(p.path_failover));
    spec.same_host_path = sameHostPathFrom(enumValue(p.same_host_path));
    *out = handle(ctx(c)->createWorld(spec));
    return MW_OK;
  });
}

}  // namespace

extern "C" {

MW_API mw_status_t mw_world_create_with(mw_context_t* c, const mw_world_params_t* params,
                                        mw_world_t** out) noexcept {
  return createWith(c, params, out);
}

MW_API mw_status_t mw_world_create(mw_context_t* c, const char* name, int rank, int size, mw_backend_t backend,
                                   int device, int timeout_ms, mw_world_t** out) noexcept {
  mw_world_params_t p = MW_WORLD_PARAMS_INIT;
  p.name = name;
  p.rank = rank;
  p.world_size = size;
  p.backend = backend;
  p.device = device;
  p.timeout_ms = timeout_ms;
  // Checked here first so that the messages name this call's arguments.
  mw_status_t s = guarded([&] {
    requireNonNull(c, "ctx");
    requireNonNull(name, "name");
    requireNonNull(out, "out");
    return MW_OK;
  });
  return s != MW_OK ? s : createWith(c, &p, out);
}

}  // extern "C"
