// The backend side of one world: what a World needs from Gloo or NCCL.
// The World owns ordering, request bookkeeping and breaking; a Communicator
// only moves bytes and reports transport failures.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "core/deadline.h"
#include "core/error.h"
#include "core/op.h"

namespace mw {

class Request;

// The transport of a world failed: a peer vanished, a connection broke, an
// operation ran past op_timeout_ms, or the world was aborted.
class TransportError : public std::runtime_error {
 public:
  TransportError(const std::string& what, int peer_rank)
      : std::runtime_error(what), peer_rank_(peer_rank) {}
  int peerRank() const noexcept { return peer_rank_; }

 private:
  int peer_rank_;  // -1 when the failing member is unknown
};

// The part of an operation that runs on the world's worker thread.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // Blocks until the operation is done or `deadline` passed. Throws
  // TransportError on transport failure or when the deadline passed.
  virtual OpResult run(Deadline deadline) = 0;

  // On the issuing thread, right after post(), and only while nothing issued
  // earlier on the same lane is pending: true, with the result, when the
  // operation has already finished, so it completes without a lane hand-off.
  // Never blocks; throws TransportError like run(). After false, run() runs.
  virtual bool finished(OpResult& result) {
    (void)result;
    return false;
  }
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  // On the issuing thread, in issue order: starts what can start at once
  // (p2p transfers) and returns the rest. Throws TransportError when the
  // transport is already known to be broken.
  virtual std::unique_ptr<PendingOp> post(const OpDesc& op) = 0;

  // The worker blocks here while it has nothing to run. Returns when wake()
  // is called; throws TransportError when a peer fails meanwhile, so an idle
  // world still notices a dead peer at once.
  virtual void idleWait() = 0;
  virtual void wake() noexcept = 0;

  // From any thread: every blocked and later backend call of this world
  // fails promptly with TransportError. Idempotent. `blamed`: the rank the
  // world broke because of, for the other members; -1 when unknown or when
  // the world is being destroyed.
  virtual void abort(int blamed) noexcept = 0;

  // After the worker stopped: releases sockets, threads and memory.
  virtual void close() noexcept = 0;

  // mw_request_cancel: true when the backend took the request's operation
  // back without touching the other members (it then completes the request
  // with Cancelled); false when only breaking the world can stop it.
  virtual bool cancel(Request& r) noexcept {
    (void)r;
    return false;
  }
};

}  // namespace mw
