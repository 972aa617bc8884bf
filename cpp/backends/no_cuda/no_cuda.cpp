// Stand-in for the CUDA backend in builds without CUDA.
#include "ringfire/base/errors.h"
#include "ringfire/ring/backend.h"

namespace ringfire {

Backend& cuda_backend(int /*device_index*/) {
  throw_not_supported("device", "this build of ringfire has no CUDA backend (built with RINGFIRE_CUDA=OFF "
                                "or without nvcc)");
}

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
bool cuda_mul_mod(const u64*, const u64*, u64*, std::size_t, u64) { return false; }

}  // namespace ringfire
