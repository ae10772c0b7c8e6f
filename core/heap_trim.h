// Gives the heap's free memory back to the system.
//
// glibc returns freed memory to the system only from the top of an arena.
// What a world's teardown, or a burst of messages, freed below longer-lived
// allocations stays resident, and a long-running process grows with every
// world it formed though what it holds does not. For the whole process.
#pragma once

namespace mw {

// malloc_trim(0), at most once per second for the process: it walks every
// arena under that arena's lock. False when it did not trim now (too soon,
// or off glibc).
bool trimHeap();

}  // namespace mw
