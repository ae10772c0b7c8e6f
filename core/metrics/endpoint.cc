#include "core/metrics/endpoint.h"

#include <httplib.h>
#include <pthread.h>

#include "core/capped_text.h"
#include "core/error.h"
#include "core/metrics/exposition.h"
#include "core/metrics/listen_address.h"
#include "core/signals.h"

namespace mw::metrics {
namespace {

// Runs each connection on the listening thread itself: a scrape is short,
// and the endpoint stays at one thread.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

Endpoint::Endpoint(const std::string& address, Source source, const char* thread_name)
    : server_(std::make_unique<httplib::Server>()) {
  auto [host, port] = splitHostPort("metrics endpoint", address);
  server_->new_task_queue = [] { return new InlineQueue; };
  server_->set_keep_alive_max_count(1);
  server_->set_read_timeout(std::chrono::seconds(1));
  server_->set_write_timeout(std::chrono::seconds(1));
  server_->Get("/metrics", [source = std::move(source)](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(source(), kTextContentType);
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(std::string("metrics unavailable: ") + e.what() + "\n", "text/plain; charset=utf-8");
    }
  });
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
  } else if (server_->bind_to_port(host, port)) {
    port_ = port;
  }
  if (port_ <= 0) {
    throw Error(Status::InvalidArgument, "metrics endpoint: cannot listen on '" + cappedText(address) +
                                             "' (an address of this host, and a port free?)");
  }
  SigpipeBlockedForNewThreads no_sigpipe;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listened_ = true;
  });
  pthread_setname_np(thread_.native_handle(), thread_name);
}

Endpoint::~Endpoint() {
  // stop() only ends a listen under way: one about to start would run on.
  while (!server_->is_running() && !listened_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace mw::metrics
