#include "core/error.h"

namespace mw {

const char* statusName(Status s) noexcept {
  switch (s) {
    case Status::Ok: return "MW_OK";
    case Status::InProgress: return "MW_IN_PROGRESS";
    case Status::InvalidArgument: return "MW_ERR_INVALID_ARGUMENT";
    case Status::NotFound: return "MW_ERR_NOT_FOUND";
    case Status::AlreadyExists: return "MW_ERR_ALREADY_EXISTS";
    case Status::Timeout: return "MW_ERR_TIMEOUT";
    case Status::WorldBroken: return "MW_ERR_WORLD_BROKEN";
    case Status::Store: return "MW_ERR_STORE";
    case Status::Backend: return "MW_ERR_BACKEND";
    case Status::Unsupported: return "MW_ERR_UNSUPPORTED";
    case Status::Cancelled: return "MW_ERR_CANCELLED";
    case Status::Internal: return "MW_ERR_INTERNAL";
    case Status::NoMemory: return "MW_ERR_NO_MEMORY";
  }
  return "MW_ERR_UNKNOWN";
}

}  // namespace mw
