// Stand-in for the CUDA backend in builds without CUDA: "cuda" devices parse,
// and using one says why it cannot work.
#include "backends/cuda/cuda_info.h"
#include "backends/cuda/registration.h"
#include "ringfire/base/errors.h"

namespace ringfire {

namespace {

[[noreturn]] void no_cuda() {
  throw_not_supported("device", "this build of ringfire has no CUDA backend (built with RINGFIRE_CUDA=OFF "
                                "or without nvcc)");
}

Backend& no_backend(int /*index*/) { no_cuda(); }
MemoryPool& no_pool(int /*index*/) { no_cuda(); }

}  // namespace

BackendRegistration cuda_registration() { return {"cuda", &no_backend, &no_pool, nullptr}; }

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
bool cuda_mul_mod(const u64*, const u64*, u64*, std::size_t, u64) { return false; }

}  // namespace ringfire
