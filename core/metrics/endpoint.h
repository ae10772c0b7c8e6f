// An HTTP endpoint that serves one text at GET /metrics (cpp-httplib, one
// thread of its own): a context's own metrics (metrics_listen) and the
// namespace's (`multiworld metrics --listen`). Connections are served one
// at a time on that thread, each for one request, so a slow client holds
// up the next scrape at most for the read timeout, never a thread more.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace mw::metrics {

class Endpoint {
 public:
  // The body of a scrape, asked for on the endpoint's thread; an exception
  // answers 500 with its message.
  using Source = std::function<std::string()>;

  // Listens on `address` ("host:port", "[v6]:port"; a port of 0 takes a
  // free one). Throws Error(InvalidArgument) naming the address when it is
  // malformed or cannot be bound. `thread_name` names the thread (at most
  // 15 characters).
  Endpoint(const std::string& address, Source source, const char* thread_name);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::atomic<bool> listened_{false};  // the thread's listen returned
  std::thread thread_;
};

}  // namespace mw::metrics
