// GPU kernel timing in builds without the CUDA backend: a clear NotSupported.
#include "bench.h"
#include "ringfire/base/errors.h"

namespace ringfire::cuda {

KernelTiming time_kernel(const std::string&, std::size_t, std::size_t, int, const std::string&, int, int, int, std::size_t) {
  throw_not_supported("cuda.bench", "this build of ringfire has no CUDA backend (built with RINGFIRE_CUDA=OFF "
                                    "or without nvcc), so GPU kernels cannot be timed");
}

}  // namespace ringfire::cuda
