// Device discovery, the checked wrapper every CUDA call goes through, and
// the cuda_mul_mod smoke test (cuda_info.h).
#include "cuda_backend.h"

#include <cstddef>
#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/fork.h"
#include "backends/cuda/cuda_info.h"

namespace ringfire {

// ===========================================================================
// Device discovery and the checked wrapper

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the (non-sticky) error
    return 0;
  }
  return count;
}

bool cuda_compiled() { return true; }

namespace cuda {

void check(cudaError_t status, const char* op) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  std::string message = std::string("CUDA error ") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
  // The CUDA driver does not survive fork(): a child of a process that
  // initialised it cannot use the GPU at all.
  if (fork_generation() > 0 && status == cudaErrorInitializationError)
    message += " (this is a forked child process: CUDA cannot be used after fork(); start GPU workers with "
               "multiprocessing's 'spawn' or 'forkserver' method)";
  throw_device_error(op, message);
}

namespace {

// The shared RF_HD arithmetic smoke test (cuda_mul_mod).
__global__ void mul_mod_kernel(const u64* a, const u64* b, u64* out, std::size_t n, Modulus mod) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = mul_mod(a[i], b[i], mod);
}

}  // namespace

}  // namespace cuda

// Runs mul_mod_kernel on n values (on the current GPU); false without a GPU.
bool cuda_mul_mod(const u64* a, const u64* b, u64* out, std::size_t n, u64 q) {
  if (cuda_device_count() == 0) return false;
  const Modulus mod(q);
  u64 *da = nullptr, *db = nullptr, *dout = nullptr;
  const std::size_t bytes = n * sizeof(u64);
  bool ok = cudaMalloc(&da, bytes) == cudaSuccess && cudaMalloc(&db, bytes) == cudaSuccess &&
            cudaMalloc(&dout, bytes) == cudaSuccess &&
            cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    const unsigned threads = 256;
    const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
    cuda::mul_mod_kernel<<<blocks, threads>>>(da, db, dout, n, mod);
    ok = cudaGetLastError() == cudaSuccess && cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return ok;
}

}  // namespace ringfire
