// Loading libmultiworld must leave the process's handlers of fatal signals
// alone: a JVM, Go or Python host relies on its own (a JVM takes SIGSEGV on
// purpose). UCX's libucs puts its own on them when it loads.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <string>

#include <multiworld/multiworld.h>

namespace {

// The file the handler of `signum` lives in, "" for none (SIG_DFL/SIG_IGN).
std::string handlerOwner(int signum) {
  struct sigaction now {};
  if (sigaction(signum, nullptr, &now) != 0) return "sigaction failed";
  void* fn = (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(now.sa_sigaction)
                                          : reinterpret_cast<void*>(now.sa_handler);
  if (fn == reinterpret_cast<void*>(SIG_DFL) || fn == reinterpret_cast<void*>(SIG_IGN)) return "";
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || !info.dli_fname) return "unknown";
  return info.dli_fname;
}

TEST(SignalHandlers, FatalSignalsKeepTheProcessHandlers) {
  if (std::getenv("UCX_ERROR_SIGNALS") || std::getenv("UCX_HANDLE_ERRORS")) {
    GTEST_SKIP() << "the environment asks for UCX's own handlers";
  }
  // Linked, so loaded: make sure a UCX context exists too.
  (void)mw_backend_available(MW_BACKEND_UCX);
  for (int signum : {SIGILL, SIGSEGV, SIGBUS, SIGFPE}) {
    const std::string owner = handlerOwner(signum);
    EXPECT_EQ(owner.find("libucs"), std::string::npos) << strsignal(signum) << " is handled by " << owner;
  }
}

}  // namespace
