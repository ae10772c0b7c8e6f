#include <cstddef>

#include "capi/src/boundary.h"
#include "capi/src/sized_struct.h"

using namespace mw;
using namespace mw::capi;

namespace {

// The smallest element a caller may pass: up to and including status.
constexpr size_t kCompletionInfoFirstSize = offsetof(mw_completion_info_t, kind);
static_assert(offsetof(mw_completion_info_t, status) == offsetof(mw_completion_t, status),
              "mw_completion_info_t starts as mw_completion_t");

// A final error status also leaves the request's reason as the last error.
mw_status_t reportRequest(Request* r, Status s) {
  if (s == Status::Ok || s == Status::InProgress) return toC(s);
  return fail(s, r->detail());
}

}  // namespace

extern "C" {

MW_API mw_status_t mw_test(mw_request_t* req) noexcept {
  return guarded([&] {
    requireNonNull(req, "req");
    return reportRequest(request(req), request(req)->test());
  });
}

MW_API mw_status_t mw_wait(mw_request_t* req, int timeout_ms) noexcept {
  return guarded([&] {
    requireNonNull(req, "req");
    auto timeout = timeoutArg(timeout_ms, "timeout_ms");
    Status s = request(req)->wait(timeout);
    if (s == Status::InProgress) {
      return fail(Status::Timeout, "request still running after " + std::to_string(timeout_ms) + " ms");
    }
    return reportRequest(request(req), s);
  });
}

MW_API void mw_request_set_user_data(mw_request_t* req, uint64_t user_data) noexcept {
  if (req) request(req)->setUserData(user_data);
}

MW_API uint64_t mw_request_user_data(const mw_request_t* req) noexcept {
  return req ? request(req)->userData() : 0;
}

MW_API mw_status_t mw_request_cancel(mw_request_t* req) noexcept {
  return guarded([&] {
    requireNonNull(req, "req");
    request(req)->cancel();
    return MW_OK;
  });
}

MW_API void mw_request_free(mw_request_t* req) noexcept {
  if (!req) return;
  try {
    request(req)->release();
  } catch (...) {
  }
}

MW_API mw_status_t mw_context_fd(mw_context_t* c, int* fd_out) noexcept {
  return guarded([&] {
    requireNonNull(fd_out, "fd_out");
    *fd_out = -1;
    requireNonNull(c, "ctx");
    *fd_out = ctx(c)->fd();
    return MW_OK;
  });
}

MW_API mw_status_t mw_context_wake(mw_context_t* c) noexcept {
  return guarded([&] {
    requireNonNull(c, "ctx");
    ctx(c)->wake();
    return MW_OK;
  });
}

MW_API mw_status_t mw_poll(mw_context_t* c, mw_completion_t* out, size_t max, int timeout_ms,
                           size_t* n_out) noexcept {
  return guarded([&] {
    requireNonNull(n_out, "n_out");
    *n_out = 0;
    requireNonNull(c, "ctx");
    if (max > 0) requireNonNull(out, "out");
    auto timeout = timeoutArg(timeout_ms, "timeout_ms");
    auto done = ctx(c)->poll(max, timeout);
    for (size_t i = 0; i < done.size(); ++i) {
      Request* r = done[i].get();
      out[i].request = handle(r);
      out[i].world = liveHandle(r->world());
      out[i].user_data = r->userData();
      out[i].status = toC(r->test());
    }
    *n_out = done.size();
    return MW_OK;
  });
}

MW_API mw_status_t mw_poll_info(mw_context_t* c, mw_completion_info_t* out, size_t elem_size, size_t max,
                                int timeout_ms, size_t* n_out) noexcept {
  return guarded([&] {
    requireNonNull(n_out, "n_out");
    *n_out = 0;
    requireNonNull(c, "ctx");
    if (max > 0) requireNonNull(out, "out");
    checkStructSize(elem_size, sizeof(mw_completion_info_t), kCompletionInfoFirstSize, "mw_completion_info_t");
    auto timeout = timeoutArg(timeout_ms, "timeout_ms");
    auto done = ctx(c)->poll(max, timeout);
    auto* bytes = reinterpret_cast<unsigned char*>(out);
    for (size_t i = 0; i < done.size(); ++i) {
      Request* r = done[i].get();
      mw_completion_info_t info{};
      info.request = handle(r);
      info.world = liveHandle(r->world());
      info.user_data = r->userData();
      info.status = toC(r->test());
      info.kind = static_cast<mw_op_kind_t>(static_cast<int>(r->kind()));
      info.bytes = r->receivedBytes();
      writeSized(bytes + i * elem_size, elem_size, &info, sizeof info, kCompletionInfoFirstSize,
                 "mw_completion_info_t");
    }
    *n_out = done.size();
    return MW_OK;
  });
}

}  // extern "C"
