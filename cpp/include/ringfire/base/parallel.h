// The CPU kernels' threads: how many, and the pool that runs them.
//
// ringfire runs its parallel loops on its own pool of worker threads rather
// than OpenMP's: GNU OpenMP's pool does not survive fork() (a forked child
// that enters a parallel region waits forever for threads that do not exist),
// and multiprocessing and Ray workers fork. This pool forgets its workers in
// a forked child (a pthread_atfork handler) and starts fresh ones there at
// its next use.
#pragma once

#include <algorithm>
#include <cstddef>

namespace ringfire {

// Number of threads CPU kernels may use. The default is the first of:
// RINGFIRE_NUM_THREADS, OMP_NUM_THREADS (its first entry, as OpenMP reads a
// list), the number of CPUs this process may run on.
int num_threads();
// Sets it (n >= 1); raises InvalidArgument otherwise.
void set_num_threads(int n);

// A block of work: body(context, begin, end) for the items [begin, end).
using RangeTask = void (*)(void* context, std::size_t begin, std::size_t end);

// Splits [0, count) into `parts` contiguous blocks of near-equal size (block
// t is [t * count / parts, (t + 1) * count / parts), as OpenMP's static
// schedule) and runs them concurrently on the pool, the caller running block
// 0 and the others going to whichever thread (a worker, or the caller once
// its block is done) claims them first; returns when all are done. An exception thrown by a block is rethrown
// here (the first one, after every block has finished). Runs everything on
// the caller, in order, when parts <= 1, when called from inside a pool task
// (no nested parallelism), or while another thread's loop holds the pool.
void parallel_run(std::size_t count, std::size_t parts, RangeTask task, void* context);

// parallel_run for a callable body(begin, end).
template <class Body>
void parallel_ranges(std::size_t count, std::size_t parts, Body& body) {
  parallel_run(count, parts,
               [](void* context, std::size_t begin, std::size_t end) { (*static_cast<Body*>(context))(begin, end); },
               &body);
}

// parallel_ranges with one part per thread, or one per item where there are
// fewer items than threads.
template <class Body>
void parallel_items(std::size_t count, Body& body) {
  parallel_ranges(count, std::min<std::size_t>(count, static_cast<std::size_t>(num_threads())), body);
}

}  // namespace ringfire
