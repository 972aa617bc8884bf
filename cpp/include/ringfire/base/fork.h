// Fork awareness. A process that forks keeps only the calling thread in the
// child, with every other piece of memory copied as it was: worker threads
// are gone, locks held by them stay locked, and random-number generators
// would replay the parent's stream. Code that owns such state compares
// fork_generation() with the value it saw when the state was made, and
// rebuilds (or reseeds) it in a child.
#pragma once

#include <cstdint>

namespace ringfire {

// How many times this process is a forked child of a process that loaded
// ringfire: 0 in the original process, incremented in every child by a
// pthread_atfork handler. Cheap (one atomic load).
std::uint64_t fork_generation();

}  // namespace ringfire
