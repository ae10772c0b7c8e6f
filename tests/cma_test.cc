// The parts of the same-host path that hold no transport
// (core/same_host/): a descriptor read back from this process's own
// memory, and each way a read is refused.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "core/same_host/cma.h"
#include "core/same_host/probe.h"

namespace {

using mw::samehost::CmaDescriptor;
using mw::samehost::CmaOutcome;
using mw::samehost::CmaTicket;

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

CmaDescriptor lend(const std::vector<uint64_t>& buf, CmaTicket& ticket) {
  CmaDescriptor d;
  d.magic = mw::samehost::kCmaMagic;
  d.address = reinterpret_cast<uint64_t>(buf.data());
  d.bytes = buf.size() * sizeof buf[0];
  d.ticket_address = ticket.address();
  d.ticket = ticket.issue();
  return d;
}

TEST(Cma, ReadsALoanWhileItsTicketHolds) {
  std::vector<uint64_t> src(100000), dst(100000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = i * 0x9e3779b97f4a7c15ull;
  CmaTicket ticket;
  const CmaDescriptor d = lend(src, ticket);
  const int self = pidfdOpen(getpid());
  ASSERT_GE(self, 0);
  EXPECT_EQ(mw::samehost::cmaRead(getpid(), self, d, dst.data()).outcome, CmaOutcome::Read);
  EXPECT_EQ(src, dst);
  ticket.withdraw();
  EXPECT_EQ(mw::samehost::cmaRead(getpid(), self, d, dst.data()).outcome, CmaOutcome::Withdrawn);
  close(self);
}

TEST(Cma, TicketsAreNeverReused) {
  CmaTicket a, b;
  const uint64_t first = a.issue();
  EXPECT_NE(first, 0u);
  EXPECT_NE(a.issue(), first);
  EXPECT_NE(b.issue(), first);
}

TEST(Cma, ABadAddressIsAFault) {
  std::vector<uint64_t> src(16), dst(16);
  CmaTicket ticket;
  CmaDescriptor d = lend(src, ticket);
  d.address = 8;  // never mapped
  const auto r = mw::samehost::cmaRead(getpid(), -1, d, dst.data());
  EXPECT_EQ(r.outcome, CmaOutcome::Fault);
  EXPECT_EQ(r.error, EFAULT);
}

// A sender that exited: gone, by ESRCH or, while it is a zombie, by its
// pidfd.
TEST(Cma, AnExitedSenderIsGone) {
  std::vector<uint64_t> src(16), dst(16);
  CmaTicket ticket;
  const CmaDescriptor d = lend(src, ticket);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  const int pidfd = pidfdOpen(child);
  ASSERT_GE(pidfd, 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // a zombie now
  EXPECT_EQ(mw::samehost::cmaRead(child, pidfd, d, dst.data()).outcome, CmaOutcome::Gone);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(mw::samehost::cmaRead(child, pidfd, d, dst.data()).outcome, CmaOutcome::Gone);
  close(pidfd);
}

TEST(SameHostProbe, ReadsThisProcessAndNamesAWrongValue) {
  const auto& self = mw::samehost::self();
  EXPECT_NE(self.probe_value, 0u);
  EXPECT_EQ(mw::samehost::probeReadable(getpid(), self.probe_address, self.probe_value), "");
  const std::string wrong = mw::samehost::probeReadable(getpid(), self.probe_address, self.probe_value + 1);
  EXPECT_NE(wrong.find("not the process that published it"), std::string::npos) << wrong;
  const std::string gone = mw::samehost::probeReadable(999999999, self.probe_address, self.probe_value);
  EXPECT_NE(gone.find("No such process"), std::string::npos) << gone;
}

}  // namespace
