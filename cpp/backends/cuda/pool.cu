// The caching device memory pool (CudaPool, cuda_backend.h), one per device.
#include "cuda_backend.h"
#include "device.h"

#include <array>
#include <mutex>

namespace ringfire::cuda {

// ===========================================================================
// Caching device memory pool

void* CudaPool::raw_allocate(std::size_t bytes) {
  if (device_ >= cuda_device_count()) throw_no_device("cuda.allocate", device_);
  DeviceGuard guard(device_);
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, bytes);
  if (status == cudaErrorMemoryAllocation) {
    // Out of memory: give the cached blocks back and retry once.
    (void)cudaGetLastError();
    flush();
    status = cudaMalloc(&block, bytes);
  }
  check(status, "cuda.allocate");
  return block;
}

void CudaPool::raw_free(void* block, std::size_t) {
  DeviceGuard guard(device_);
  (void)cudaFree(block);  // implicitly synchronises the device: only flush() gets here
}

CudaPool& device_pool(int index) {
  static std::mutex mutex;
  // Leaked on purpose: buffers in static objects may be released after main.
  static std::array<CudaPool*, kMaxDevices> pools{};
  if (index < 0 || index >= kMaxDevices) throw_no_device("cuda.pool", index);
  std::lock_guard<std::mutex> lock(mutex);
  if (pools[index] == nullptr) pools[index] = new CudaPool(index);
  return *pools[index];
}

}  // namespace ringfire::cuda
