#include "tools/multiworld/embedded_redis.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mwcli {

EmbeddedRedis::EmbeddedRedis() {
  char tmpl[] = "/tmp/multiworld-redis-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cannot make a temp dir for redis-server");
  dir_ = tmpl;
  const std::string sock = dir_ + "/redis.sock";
  std::vector<std::string> args = {"redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
                                   "--save", "", "--appendonly", "no", "--dir", dir_, "--logfile",
                                   dir_ + "/redis.log"};
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    setpgid(0, 0);  // not killed by the terminal's ^C before we stop it ourselves
    execvp("redis-server", argv.data());
    _exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    if (redisContext* c = redisConnectUnix(sock.c_str())) {
      bool up = !c->err;
      redisFree(c);
      if (up) return;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server did not start (is it installed? apt-get install redis-server)");
    }
    // Start-up gives us nothing to wait on; probe every 10 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("redis-server did not accept connections within 5 s");
}

EmbeddedRedis::~EmbeddedRedis() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace mwcli
