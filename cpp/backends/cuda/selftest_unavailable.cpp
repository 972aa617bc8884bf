// The CUDA self-test in builds without the CUDA backend (RINGFIRE_CUDA=OFF or
// no nvcc): a clear NotSupported, which Python sees as NotImplementedError.
#include "ringfire/base/errors.h"
#include "selftest.h"

namespace ringfire::cuda {

std::vector<std::pair<std::string, bool>> selftest(std::size_t, std::size_t, std::uint64_t) {
  throw_not_supported("cuda.selftest", "this build of ringfire has no CUDA backend (built with RINGFIRE_CUDA=OFF "
                                       "or without nvcc), so there is nothing to test on a GPU");
}

}  // namespace ringfire::cuda
