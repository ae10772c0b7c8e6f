// Why a member aborts its Gloo world, told in-band to the other members
// before its connections close.
//
// A member that breaks a world of three or more aborts its Gloo context,
// which closes every one of its pairs. A member blocked in a collective on
// a healthy peer then sees that peer's connection close first, and would
// blame it. So the aborting member first sends each other member (but the
// one it blames) one notice naming the rank it blames, on a slot of its
// own; TCP delivers it before the close. Whoever then sees that peer's
// connection fail takes the notice's rank as the one to blame.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <gloo/transport/tcp/context.h>

#include "core/backends/gloo/gloo_buffer.h"

namespace mw {

class GlooNotices {
 public:
  // Posts the receive of one notice from every other rank. Throws Gloo's
  // error when a pair has failed already.
  GlooNotices(const std::shared_ptr<gloo::transport::tcp::Context>& tcp, int rank, int size);
  ~GlooNotices();

  // Once: tells every other member but `blamed` that this one aborts
  // because of `blamed` (a rank other than this one's). Best effort: a
  // notice that cannot be written at once goes with the connection.
  void tell(int blamed) noexcept;

  // The rank `peer` said it aborts because of, once its notice is in.
  std::optional<int> heard(int peer);

 private:
  const int rank_, size_;
  std::vector<uint32_t> in_;                        // by peer, written by Gloo's thread
  std::vector<std::unique_ptr<GlooBuffer>> from_;   // by peer; null for this rank
  uint32_t out_ = 0;
  std::unique_ptr<GlooBuffer> to_;

  std::mutex m_;
  bool told_ = false;
  std::vector<std::optional<int>> heard_;  // taken from from_, by peer
};

}  // namespace mw
