#include "tools/multiworld/message_node.h"

#include <cstring>
#include <stdexcept>

namespace mwcli {

mw_context_t* newDemoContext() {
  mw_config_t* cfg = nullptr;
  if (mw_config_new(&cfg) != MW_OK) return nullptr;
  mw_context_t* ctx = nullptr;
  if (mw_config_set(cfg, "metrics_publish_ms", "1000") != MW_OK || mw_context_new(cfg, &ctx) != MW_OK) ctx = nullptr;
  mw_config_free(cfg);
  return ctx;
}

MessageNode::~MessageNode() {
  for (auto& e : endpoints_) {
    if (!e->closed) close(*e);
  }
  // Cancelled requests of destroyed worlds are still to be reaped.
  mw_completion_t done[64];
  size_t n = 0;
  while (mw_poll(ctx_, done, 64, 0, &n) == MW_OK && n > 0) {
    for (size_t i = 0; i < n; ++i) {
      delete reinterpret_cast<Op*>(done[i].user_data);
      mw_request_free(done[i].request);
    }
  }
}

Endpoint& MessageNode::connect(const std::string& name, int rank, bool inbound, int tag, int timeout_ms) {
  auto e = std::make_unique<Endpoint>();
  e->name = name;
  e->peer = 1 - rank;
  e->inbound = inbound;
  e->tag = tag;
  if (mw_world_create(ctx_, name.c_str(), rank, 2, MW_BACKEND_UCX, 0, timeout_ms, &e->world) != MW_OK) {
    throw std::runtime_error("cannot form world " + name + ": " + mw_last_error());
  }
  endpoints_.push_back(std::move(e));
  Endpoint& ref = *endpoints_.back();
  if (inbound) postReceive(ref);
  return ref;
}

std::unique_ptr<Message> MessageNode::takeBuffer() {
  if (free_.empty()) return std::make_unique<Message>();
  auto m = std::move(free_.back());
  free_.pop_back();
  return m;
}

bool MessageNode::postReceive(Endpoint& e) {
  auto op = std::make_unique<Op>(Op{&e, takeBuffer(), true});
  mw_request_t* req = nullptr;
  if (mw_recv_async(e.world, op->buffer.get(), sizeof(Message), MW_UINT8, e.peer, &req) != MW_OK) {
    free_.push_back(std::move(op->buffer));
    return false;
  }
  mw_request_set_user_data(req, reinterpret_cast<uint64_t>(op.release()));
  ++e.outstanding;
  return true;
}

bool MessageNode::send(Endpoint& e, const Message& m) {
  if (e.broken || e.closed) return false;
  auto op = std::make_unique<Op>(Op{&e, takeBuffer(), false});
  std::memcpy(op->buffer.get(), &m, sizeof(Message));
  mw_request_t* req = nullptr;
  if (mw_send_async(e.world, op->buffer.get(), sizeof(Message), MW_UINT8, e.peer, &req) != MW_OK) {
    free_.push_back(std::move(op->buffer));
    return false;
  }
  mw_request_set_user_data(req, reinterpret_cast<uint64_t>(op.release()));
  ++e.outstanding;
  return true;
}

void MessageNode::markBroken(Endpoint& e, const std::string& why, const OnBroken& on_broken) {
  if (e.broken || e.closed) return;
  e.broken = true;
  on_broken(e, why);
}

void MessageNode::pump(int timeout_ms, const OnMessage& on_message, const OnBroken& on_broken) {
  mw_completion_t done[32];
  size_t n = 0;
  if (mw_poll(ctx_, done, 32, timeout_ms, &n) != MW_OK) n = 0;
  for (size_t i = 0; i < n; ++i) {
    std::unique_ptr<Op> op(reinterpret_cast<Op*>(done[i].user_data));
    Endpoint& e = *op->endpoint;
    --e.outstanding;
    const mw_status_t status = done[i].status;
    if (status != MW_OK) {
      std::string why = mw_status_string(status);
      if (mw_test(done[i].request) != MW_OK) why = mw_last_error();
      if (status == MW_ERR_WORLD_BROKEN) markBroken(e, why, on_broken);
    } else if (op->receive && !e.broken && !e.closed) {
      if (op->buffer->h.magic == kDemoMagic) on_message(e, *op->buffer);
      if (!e.broken && !e.closed) postReceive(e);
    }
    mw_request_free(done[i].request);
    free_.push_back(std::move(op->buffer));
  }
  mw_event_t ev;
  while (mw_next_event(ctx_, &ev, 0) == MW_OK) {
    if (ev.type != MW_EVENT_WORLD_BROKEN) continue;
    for (auto& e : endpoints_) {
      if (e->world == ev.world && !e->closed) markBroken(*e, ev.detail, on_broken);
    }
  }
  // Endpoints closed earlier go once their last request is reaped.
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    it = ((*it)->closed && (*it)->outstanding == 0) ? endpoints_.erase(it) : std::next(it);
  }
}

void MessageNode::close(Endpoint& e) {
  if (e.closed) return;
  e.closed = true;
  mw_world_destroy(e.world);
  e.world = nullptr;
}

std::vector<Endpoint*> MessageNode::endpoints() {
  std::vector<Endpoint*> out;
  for (auto& e : endpoints_) {
    if (!e->closed) out.push_back(e.get());
  }
  return out;
}

}  // namespace mwcli
