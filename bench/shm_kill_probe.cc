// Why UCX worlds take no shared memory (README, "Host worlds (UCX)"), shown
// with raw UCX 1.13 and nothing of ours.
//
// Shared memory comes only with endpoints in error-handling mode NONE. A
// process receives from two senders on one host: B sends a small message
// every millisecond, C streams 8 KiB messages as fast as it can. C is
// killed at a random moment. When the kill lands after C claimed a slot of
// the receiver's FIFO but before it published it, the FIFO stays blocked at
// that slot and the receiver never again gets anything from B either: one
// dead process silences every same-host peer of the survivor.
//
//   shm_kill_probe [trials]   (default 30; prints how many kills did that)
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr ucp_tag_t kTagFromB = 2;
constexpr ucp_tag_t kTagFromC = 3;
constexpr int kStuckExit = 7;

void require(ucs_status_t s, const char* what) {
  if (s == UCS_OK) return;
  std::fprintf(stderr, "%s: %s\n", what, ucs_status_string(s));
  _exit(1);
}

struct Worker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::string address;
};

Worker makeWorker() {
  Worker x;
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  require(ucp_init(&params, nullptr, &x.context), "ucp_init");
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  require(ucp_worker_create(x.context, &wp, &x.worker), "ucp_worker_create");
  ucp_address_t* address;
  size_t length;
  require(ucp_worker_get_address(x.worker, &address, &length), "ucp_worker_get_address");
  x.address.assign(reinterpret_cast<char*>(address), length);
  ucp_worker_release_address(x.worker, address);
  return x;
}

ucp_ep_h connect(const Worker& x, const std::string& address) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;  // the mode that gets shared memory
  ucp_ep_h ep;
  require(ucp_ep_create(x.worker, &params, &ep), "ucp_ep_create");
  return ep;
}

void finish(ucp_worker_h worker, void* request) {
  if (!UCS_PTR_IS_PTR(request)) return;
  while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker);
  ucp_request_free(request);
}

[[noreturn]] void sendForever(const std::string& receiver, ucp_tag_t tag, size_t bytes, useconds_t pause) {
  Worker x = makeWorker();
  ucp_ep_h ep = connect(x, receiver);
  std::vector<char> message(bytes, 'm');
  for (;;) {
    ucp_request_param_t p{};
    finish(x.worker, ucp_tag_send_nbx(ep, message.data(), message.size(), tag, &p));
    if (pause > 0) {
      for (int i = 0; i < 20; ++i) ucp_worker_progress(x.worker);
      usleep(pause);
    }
  }
}

struct SharedAddress {
  char bytes[4096];
  size_t length;
  volatile int ready;
};

// Exits with kStuckExit once B, heard before, has been silent for a second.
[[noreturn]] void receiveForever(SharedAddress* shared) {
  Worker x = makeWorker();
  if (x.address.size() > sizeof shared->bytes) _exit(1);
  std::memcpy(shared->bytes, x.address.data(), x.address.size());
  shared->length = x.address.size();
  shared->ready = 1;
  std::vector<char> buffer(8192);
  bool heard_b = false;
  Clock::time_point last_b = Clock::now();
  for (;;) {
    ucp_tag_recv_info_t info{};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_RECV_INFO;
    p.recv_info.tag_info = &info;
    void* r = ucp_tag_recv_nbx(x.worker, buffer.data(), buffer.size(), 0, 0, &p);
    while (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS) {
      ucp_worker_progress(x.worker);
      if (heard_b && Clock::now() - last_b > std::chrono::seconds(1)) _exit(kStuckExit);
    }
    if (UCS_PTR_IS_PTR(r)) {
      ucp_request_test(r, &info);
      ucp_request_free(r);
    }
    if (info.sender_tag == kTagFromB) {
      heard_b = true;
      last_b = Clock::now();
    }
  }
}

// One trial: true when the kill of C silenced B as well.
bool killSilencesOthers(std::mt19937& rng) {
  void* mapping = mmap(nullptr, sizeof(SharedAddress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* shared = static_cast<SharedAddress*>(mapping);
  pid_t a = fork();
  if (a == 0) receiveForever(shared);
  while (!shared->ready) usleep(100);
  std::string receiver(shared->bytes, shared->length);
  pid_t b = fork();
  if (b == 0) sendForever(receiver, kTagFromB, 8, 1000);
  pid_t c = fork();
  if (c == 0) sendForever(receiver, kTagFromC, 8000, 0);
  usleep(200000 + rng() % 100000);
  kill(c, SIGKILL);
  waitpid(c, nullptr, 0);
  usleep(1500000);
  int status = 0;
  bool stuck = waitpid(a, &status, WNOHANG) == a && WIFEXITED(status) && WEXITSTATUS(status) == kStuckExit;
  kill(a, SIGKILL);
  kill(b, SIGKILL);
  waitpid(a, nullptr, 0);
  waitpid(b, nullptr, 0);
  munmap(mapping, sizeof(SharedAddress));
  return stuck;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = argc > 1 ? std::atoi(argv[1]) : 30;
  if (trials <= 0) {
    std::fprintf(stderr, "usage: shm_kill_probe [trials > 0], got %s\n", argv[1]);
    return 2;
  }
  std::mt19937 rng(42);
  int stuck = 0;
  for (int t = 0; t < trials; ++t) stuck += killSilencesOthers(rng);
  std::printf("%d of %d kills of a sender left the receiver unable to receive from any other sender\n", stuck, trials);
  return 0;
}
