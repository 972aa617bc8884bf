// Thread count used by the CPU loops (OpenMP when available).
#pragma once

namespace ringfire {

// Number of threads CPU kernels may use; defaults to the hardware count, or
// RINGFIRE_NUM_THREADS when that is set.
int num_threads();
// Sets it (n >= 1); raises InvalidArgument otherwise.
void set_num_threads(int n);

}  // namespace ringfire
