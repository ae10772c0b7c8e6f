// The fixture of the API tests' workers: a context and the world it joins,
// more worlds on the same context through create(), the world and the
// context destroyed with it.
#pragma once

#include <multiworld/multiworld.h>

#include <string>
#include <utility>
#include <vector>

namespace mwtest {

using Settings = std::vector<std::pair<std::string, std::string>>;

// Generous liveness settings: the machine is small and the sanitizer builds
// are slow, and the tests that use them are about results, not failure
// detection.
inline const Settings kPatientSettings = {{"heartbeat_timeout_ms", "30000"}, {"store_timeout_ms", "10000"}};

class Member {
 public:
  // The context gets `settings` (beyond redis_url and loopback transport,
  // see newContext); every world waits up to `create_timeout_ms` for its
  // members.
  explicit Member(Settings settings = kPatientSettings, int create_timeout_ms = 30000);
  ~Member();
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  // A context on `url` and world `name` of `size` on it as `rank`; false
  // (said on stderr) when either fails.
  bool join(const std::string& url, const char* name, int rank, int size);
  // Another world on the same context, owned by the caller.
  bool create(const char* name, int rank, int size, mw_world_t** out);

  mw_context_t* ctx = nullptr;
  mw_world_t* world = nullptr;

 private:
  Settings settings_;
  int create_timeout_ms_;
};

}  // namespace mwtest
