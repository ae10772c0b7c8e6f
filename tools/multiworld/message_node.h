// One demo process's view of its worlds: each is a two-rank UCX world with
// one peer (tcp on loopback between the demo's processes), carrying
// fixed-size messages. Keeps a receive posted on every
// inbound world, recycles message buffers, and reports received messages
// and broken worlds from one mw_poll loop.
#pragma once

#include <multiworld/multiworld.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/multiworld/demo_protocol.h"

namespace mwcli {

// A context of the demo: defaults from the environment, with its metrics
// published every second, so that a scrape during a short run is current.
// NULL, with mw_last_error() saying why, when it cannot be made.
mw_context_t* newDemoContext();

struct Endpoint {
  std::string name;
  mw_world_t* world = nullptr;
  int peer = 0;
  bool inbound = false;  // keep a receive posted
  bool broken = false;
  bool closed = false;
  int outstanding = 0;   // requests not completed yet
  int tag = -1;          // the owner's label (e.g. a replica id)
};

class MessageNode {
 public:
  using OnMessage = std::function<void(Endpoint&, const Message&)>;
  using OnBroken = std::function<void(Endpoint&, const std::string& why)>;

  explicit MessageNode(mw_context_t* ctx) : ctx_(ctx) {}
  ~MessageNode();

  // Forms the world (blocking); throws std::runtime_error with the reason.
  Endpoint& connect(const std::string& name, int rank, bool inbound, int tag, int timeout_ms = 30000);
  // False when the world is broken or closed (the message is dropped).
  bool send(Endpoint& e, const Message& m);
  // Waits up to timeout_ms for completions and events and dispatches them.
  void pump(int timeout_ms, const OnMessage& on_message, const OnBroken& on_broken);
  // Destroys the world; its pending requests complete as cancelled.
  void close(Endpoint& e);
  std::vector<Endpoint*> endpoints();

 private:
  struct Op {
    Endpoint* endpoint;
    std::unique_ptr<Message> buffer;
    bool receive;
  };
  std::unique_ptr<Message> takeBuffer();
  bool postReceive(Endpoint& e);
  void markBroken(Endpoint& e, const std::string& why, const OnBroken& on_broken);

  mw_context_t* ctx_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::unique_ptr<Message>> free_;
};

}  // namespace mwcli
