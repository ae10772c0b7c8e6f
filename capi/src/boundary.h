// What every C entry point shares: the thread-local last error, the one
// place exceptions are caught and turned into statuses, and the handle
// conversions. Holds no library logic.
#pragma once

#include <cstring>
#include <string>

#include "core/context.h"
#include "core/error.h"
#include "core/request.h"
#include "core/world.h"
#include "multiworld/multiworld.h"

namespace mw::capi {

void setLastError(const std::string& message) noexcept;
const char* lastError() noexcept;

inline mw_status_t toC(Status s) { return static_cast<mw_status_t>(static_cast<int>(s)); }

mw_status_t fail(Status s, const std::string& message) noexcept;

// Runs `f`; an exception becomes its status plus the last-error message.
template <typename F>
mw_status_t guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const Error& e) {
    return fail(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(Status::NoMemory, "out of memory");
  } catch (const std::exception& e) {
    return fail(Status::Internal, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(Status::Internal, "internal error: unknown exception");
  }
}

inline Config* cfg(mw_config_t* p) { return reinterpret_cast<Config*>(p); }
inline const Config* cfg(const mw_config_t* p) { return reinterpret_cast<const Config*>(p); }
inline Context* ctx(mw_context_t* p) { return reinterpret_cast<Context*>(p); }
inline World* world(mw_world_t* p) { return reinterpret_cast<World*>(p); }
inline const World* world(const mw_world_t* p) { return reinterpret_cast<const World*>(p); }
inline mw_world_t* handle(World* w) { return reinterpret_cast<mw_world_t*>(w); }
inline Request* request(mw_request_t* p) { return reinterpret_cast<Request*>(p); }
inline const Request* request(const mw_request_t* p) { return reinterpret_cast<const Request*>(p); }
inline mw_request_t* handle(Request* r) { return reinterpret_cast<mw_request_t*>(r); }

// The handle of a world, or NULL once it was destroyed.
inline mw_world_t* liveHandle(const std::shared_ptr<World>& w) {
  return (w && w->state() != WorldState::Destroyed) ? handle(w.get()) : nullptr;
}

// The integer a C caller passed for an enum parameter. Reading an enum
// object that holds a value outside its enumerators is undefined in C++,
// and C callers may pass anything, so the bytes are copied instead.
template <typename E>
int enumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Throws Error(InvalidArgument) naming `what` when p is NULL.
void requireNonNull(const void* p, const char* what);
std::chrono::milliseconds timeoutArg(int timeout_ms, const char* what);

}  // namespace mw::capi
