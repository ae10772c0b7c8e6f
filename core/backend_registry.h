// The backends a world can run on, in one table: each behind BackendKind
// (what it takes to start one of its worlds) and WorldBackend (a world of
// it, with its shrink and grow). The context picks a world's backend here
// and nowhere else, so adding a backend touches this table and its own
// folder.
#pragma once

#include <memory>
#include <string>

#include "core/deadline.h"
#include "core/world_spec.h"

namespace gloo {
namespace transport {
class Device;
}
}  // namespace gloo

namespace mw {

class Incarnation;
class RedisPool;
class UcxContext;
class WorldBackend;
struct NcclThreads;

// What a context lends the backends of its worlds. The engines start on
// first use and are shared by every world of the context.
class BackendServices {
 public:
  virtual RedisPool& pool() = 0;
  // Throws Error(Backend) when UCX cannot start.
  virtual std::shared_ptr<UcxContext> ucx() = 0;
  virtual std::shared_ptr<NcclThreads> ncclThreads() = 0;
  virtual const std::shared_ptr<gloo::transport::Device>& glooDevice() = 0;

 protected:
  ~BackendServices() = default;
};

class BackendKind {
 public:
  virtual ~BackendKind() = default;
  virtual Backend id() const = 0;
  // Compiled in and usable on this host (mw_backend_available).
  virtual bool available() const noexcept = 0;
  // Before any rendezvous, so that a member that cannot run the world
  // fails at once, saying why, instead of making the others wait: throws
  // Error(Unsupported), or Error(InvalidArgument) naming a value (a
  // device) this host cannot honour.
  virtual void require(const WorldSpec& spec) const = 0;
  // Before the rendezvous too: starts what the world's transport needs
  // running early (UCX's listener), so that the members connect as soon as
  // they all claimed.
  virtual void prepare(BackendServices& services) const { (void)services; }
  // This member's part of incarnation `inc` as `rank`: a create, a grow's
  // newcomer, or a resize whose old backend kept nothing. Throws Error
  // (Timeout, Store, Backend, Unsupported, WorldBroken), or MovedOn when
  // the incarnation ends while it waits.
  virtual std::unique_ptr<WorldBackend> connect(BackendServices& services, const Incarnation& inc, int rank,
                                                const WorldSpec& spec, const WorldSettings& settings,
                                                Deadline deadline) const = 0;
};

// The kind of `b`; null for a value that names no backend.
const BackendKind* backendKind(Backend b) noexcept;
// "MW_BACKEND_GLOO (1), MW_BACKEND_NCCL (2) or MW_BACKEND_UCX (3)".
std::string backendChoices();

// Each backend's entry, in its own folder.
const BackendKind& glooBackend();
const BackendKind& ucxBackend();
const BackendKind& ncclBackend();

}  // namespace mw
