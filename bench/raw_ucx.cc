#include "bench/raw_ucx.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace mwbench {
namespace {

[[noreturn]] void fail(const char* what, ucs_status_t s) {
  throw RawUcxError(std::string("raw UCX: ") + what + ": " + ucs_status_string(s));
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

// The mm transports are in unless UCX_TLS names neither them nor "all" (or
// excludes them with '^').
bool RawUcx::sharedMemoryAllowed() {
  const char* env = std::getenv("UCX_TLS");
  if (!env || !*env) return true;
  std::string list(env);
  const bool exclude = list[0] == '^';
  if (exclude) list.erase(0, 1);
  bool all = false, sm = false, posix = false, sysv = false;
  std::istringstream in(list);
  for (std::string tl; std::getline(in, tl, ',');) {
    all |= tl == "all";
    sm |= tl == "sm" || tl == "shm" || tl == "mm";
    posix |= tl == "posix";
    sysv |= tl == "sysv";
  }
  if (exclude) return !(all || sm || (posix && sysv));
  return all || sm || posix || sysv;
}

std::string RawUcx::lanes(int ep) const {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return "";
  ucp_ep_print_info(eps_.at(static_cast<size_t>(ep)), f);
  std::fclose(f);
  std::istringstream in(text ? text : "");
  std::free(text);
  // Lines like "#  lane[0]:  2:tcp/lo.0 md[1]  -> md[1]/tcp/sysdev[255] am ..."
  std::vector<std::string> seen;
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const size_t lane = line.find("lane[");
    if (lane == std::string::npos) continue;
    const size_t index_end = line.find(':', lane);
    const size_t start = index_end == std::string::npos ? index_end : line.find(':', index_end + 1);
    if (start == std::string::npos) continue;
    std::string tl = line.substr(start + 1, line.find(' ', start) - start - 1);
    tl = tl.substr(0, tl.rfind('.'));  // "tcp/lo.0" -> "tcp/lo"
    if (std::find(seen.begin(), seen.end(), tl) != seen.end()) continue;
    seen.push_back(tl);
    out += (out.empty() ? "" : " ") + tl;
  }
  return out;
}

RawUcx::RawUcx(ucp_err_handling_mode_t mode, const char* net_devices) : mode_(mode) {
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) fail("ucp_config_read", s);
  if (net_devices && *net_devices && !std::getenv("UCX_NET_DEVICES")) {
    s = ucp_config_modify(config, "NET_DEVICES", net_devices);
    if (s != UCS_OK) {
      ucp_config_release(config);
      fail("setting NET_DEVICES", s);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.name = "mw_bench-raw";
  s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) fail("ucp_init", s);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  s = ucp_worker_create(context_, &wp, &worker_);
  if (s != UCS_OK) {
    ucp_cleanup(context_);
    fail("ucp_worker_create", s);
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  s = ucp_worker_get_address(worker_, &addr, &len);
  if (s != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    fail("ucp_worker_get_address", s);
  }
  address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(worker_, addr);
  s = ucp_worker_get_efd(worker_, &efd_);
  if (s != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    fail("ucp_worker_get_efd", s);
  }
}

RawUcx::~RawUcx() {
  // Endpoints still open (an error path) are dropped with the worker.
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

int RawUcx::connect(const std::string& peer_address) {
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  params.err_mode = mode_;
  params.err_handler.cb = &RawUcx::onEndpointError;
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  ucs_status_t s = ucp_ep_create(worker_, &params, &ep);
  if (s != UCS_OK) fail("ucp_ep_create", s);
  eps_.push_back(ep);
  return static_cast<int>(eps_.size()) - 1;
}

void RawUcx::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<RawUcx*>(arg)->ep_error_ = status;
}

void RawUcx::complete(RawUcxOp& op, ucs_status_t status, size_t length) {
  op.done = true;
  op.status = status;
  op.length = length;
  if (op.queue) {
    completed_.push_back(&op);
    any_completed_ = true;
  }
}

void RawUcx::onSend(void* request, ucs_status_t status, void* arg) {
  auto* op = static_cast<RawUcxOp*>(arg);
  ucp_request_free(request);
  op->owner->complete(*op, status, 0);
}

void RawUcx::onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg) {
  auto* op = static_cast<RawUcxOp*>(arg);
  ucp_request_free(request);
  op->owner->complete(*op, status, info ? info->length : 0);
}

void RawUcx::send(int ep, const void* buf, size_t n, uint64_t tag, RawUcxOp& op) {
  if (ep_error_ != UCS_OK) fail("endpoint error", ep_error_);
  op.owner = this;
  op.done = false;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &RawUcx::onSend;
  param.user_data = &op;
  void* r = ucp_tag_send_nbx(eps_.at(static_cast<size_t>(ep)), buf, n, tag, &param);
  if (r == nullptr) {
    complete(op, UCS_OK, 0);
  } else if (UCS_PTR_IS_ERR(r)) {
    complete(op, UCS_PTR_STATUS(r), 0);
  }
}

void RawUcx::recv(void* buf, size_t n, uint64_t tag, RawUcxOp& op) {
  op.owner = this;
  op.done = false;
  ucp_request_param_t param{};
  // Always through the callback, as multiworld does: UCX 1.13 leaves
  // recv_info.tag_info unset when it completes a receive at once, so only
  // the callback tells the length.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &RawUcx::onRecv;
  param.user_data = &op;
  void* r = ucp_tag_recv_nbx(worker_, buf, n, tag, ~uint64_t{0}, &param);
  if (UCS_PTR_IS_ERR(r)) {
    complete(op, UCS_PTR_STATUS(r), 0);
  }
}

void RawUcx::progressUntil(const bool& flag, double timeout_s, const char* what) {
  double deadline = 0;
  for (unsigned spins = 0; !flag; ++spins) {
    ucp_worker_progress(worker_);
    if ((spins & 0xfff) == 0xfff) {
      if (ep_error_ != UCS_OK) fail(what, ep_error_);
      const double t = now();
      if (deadline == 0) {
        deadline = t + timeout_s;
      } else if (t > deadline) {
        throw RawUcxError(std::string("raw UCX: ") + what + ": nothing completed within " +
                          std::to_string(timeout_s) + " s");
      }
    }
  }
}

void RawUcx::wait(RawUcxOp& op, double timeout_s) {
  progressUntil(op.done, timeout_s, "wait");
  if (op.status != UCS_OK) fail("a transfer failed", op.status);
}

void RawUcx::waitSleeping(RawUcxOp& op, double spin_s, double timeout_s) {
  progressSleeping(op.done, spin_s, timeout_s, "wait");
  if (op.status != UCS_OK) fail("a transfer failed", op.status);
}

void RawUcx::pollSleeping(std::vector<RawUcxOp*>& out, double spin_s, double timeout_s) {
  out.clear();
  if (!any_completed_) ucp_worker_progress(worker_);
  progressSleeping(any_completed_, spin_s, timeout_s, "poll");
  out.swap(completed_);
  any_completed_ = false;
}

void RawUcx::progressSleeping(const bool& flag, double spin_s, double timeout_s, const char* what) {
  const double start = now(), spin_end = start + spin_s, deadline = start + timeout_s;
  long sleep_ns = 20000;
  while (!flag) {
    if (ucp_worker_progress(worker_) != 0 || now() < spin_end) continue;
    if (ep_error_ != UCS_OK) fail(what, ep_error_);
    if (now() > deadline) {
      throw RawUcxError(std::string("raw UCX: ") + what + ": nothing completed within " + std::to_string(timeout_s) +
                        " s");
    }
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;  // events came in meanwhile
    pollfd p{efd_, POLLIN, 0};
    const timespec ts{0, sleep_ns};
    ::ppoll(&p, 1, &ts, nullptr);
    sleep_ns = std::min(sleep_ns * 2, 1000000L);
  }
}

void RawUcx::poll(std::vector<RawUcxOp*>& out, double timeout_s) {
  out.clear();
  if (!any_completed_) ucp_worker_progress(worker_);
  progressUntil(any_completed_, timeout_s, "poll");
  out.swap(completed_);
  any_completed_ = false;
}

void RawUcx::closeAll(double timeout_s) {
  std::vector<void*> pending;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = 0;  // flush: the peers are up
  for (ucp_ep_h ep : eps_) {
    void* r = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(r)) pending.push_back(r);
  }
  eps_.clear();
  const double deadline = now() + timeout_s;
  for (void* r : pending) {
    while (ucp_request_check_status(r) == UCS_INPROGRESS && now() < deadline) ucp_worker_progress(worker_);
    ucp_request_free(r);
  }
}

}  // namespace mwbench
