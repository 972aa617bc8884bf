// CUDA backend placeholder. It proves the build toggle and that the shared
// RF_HD arithmetic compiles for sm_80/sm_90; the kernels arrive with the GPU
// backend. Until then a CUDA device raises NotSupported with a clear message.
#include <cuda_runtime.h>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/backend.h"

namespace ringfire {

namespace {

// Element-wise a*b mod q with the same mul_mod the CPU backend uses.
__global__ void mul_mod_kernel(const u64* a, const u64* b, u64* out, std::size_t n, Modulus mod) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = mul_mod(a[i], b[i], mod);
}

}  // namespace

// Number of CUDA devices the runtime sees (0 when no driver or GPU).
int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

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
    mul_mod_kernel<<<blocks, threads>>>(da, db, dout, n, mod);
    ok = cudaGetLastError() == cudaSuccess && cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return ok;
}

Backend& cuda_backend(int device_index) {
  throw_not_supported("device", "cuda:" + std::to_string(device_index) +
                                    ": the CUDA backend is compiled in but its polynomial kernels are not "
                                    "implemented yet");
}

bool cuda_compiled() { return true; }

}  // namespace ringfire
