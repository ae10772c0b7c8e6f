// Cross-memory attach between two processes of one host: the receiver
// copies a message straight out of the sender's memory with
// process_vm_readv, one copy, and nothing is shared between the two. No
// transport here: the descriptor travels in the message's place on the
// world's tagged channel, and the receiver's "done" on its control channel.
//
// A sender may stop lending its buffer before the receiver read it (its
// world broke, it left): it then withdraws the ticket, a word of its own
// memory the descriptor names, before the buffer goes back to its caller.
// The receiver reads the ticket after the data; a ticket that still holds
// its value proves the data was read before the buffer was handed back.
// The sender's pidfd, checked after the read, proves the pid was still the
// sender's (not a new process that reused it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace mw::samehost {

// What a sender puts on the wire in place of a message it lends.
struct CmaDescriptor {
  uint64_t magic = 0;
  uint64_t address = 0;         // the send buffer, in the sender
  uint64_t bytes = 0;           // its size
  uint64_t ticket_address = 0;  // a CmaTicket of the sender
  uint64_t ticket = 0;          // the value it holds while the buffer is lent
  uint64_t id = 0;              // what the receiver's "done" names
};
constexpr uint64_t kCmaMagic = 0x31616d63776dull;  // "mwcma1"

// The sender's word that says a buffer is still lent. Owner: the engine's
// owner of the sending process; the receiving process only reads it.
class CmaTicket {
 public:
  // A value no other ticket of this process held before, never 0.
  uint64_t issue();
  // The buffer goes back to its caller after this returns: a receiver
  // that reads the ticket from now on finds 0 and drops what it read.
  void withdraw();
  uint64_t address() const { return reinterpret_cast<uint64_t>(&word_); }

 private:
  std::atomic<uint64_t> word_{0};
};

enum class CmaOutcome {
  Read,       // every byte copied, the ticket held
  Gone,       // the sender's process is gone (ESRCH, or its pidfd says so)
  Refused,    // EPERM: the kernel does not let this process read it
  Withdrawn,  // the sender stopped lending the buffer
  Fault,      // a bad address or a short read: the sender's memory is not what it said
};

struct CmaResult {
  CmaOutcome outcome = CmaOutcome::Read;
  int error = 0;  // errno of the failing call, 0 if none
};

// Copies `d.bytes` bytes from process `pid` into `dest`, then checks the
// ticket. `pidfd` (of the same process; -1: none) must not be readable
// afterwards.
CmaResult cmaRead(int pid, int pidfd, const CmaDescriptor& d, void* dest);

// "read", "sender gone", ... for messages.
const char* describe(CmaOutcome outcome);

}  // namespace mw::samehost
