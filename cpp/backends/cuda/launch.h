// Internal to backends/cuda: what the kernel files share to launch kernels
// (scratch blocks from the device pool, launch geometry, a thread's
// coordinates). Anonymous namespace: each .cu keeps its own internal copy.
//
// Grid convention everywhere (Troy-nova / Phantom): x = coefficient (chunks
// of up to 256 threads, one coefficient each, so a warp reads 256 contiguous
// bytes), y = limb, z = polynomial. N is a power of two >= 4, so the x-grid
// covers a limb exactly and no division by N or by the limb count is needed.
#pragma once

#include <algorithm>
#include <cstddef>

#include "cuda_backend.h"
#include "ringfire/base/errors.h"

namespace ringfire::cuda {
namespace {

// A scratch block from a device pool, returned at scope exit. Returning it
// while kernels that use it are still queued is safe: the next user of the
// block is ordered after them on the same in-order stream.
class Scratch {
 public:
  Scratch(CudaPool& pool, std::size_t words)
      : pool_(pool), bytes_(std::max<std::size_t>(words, 1) * sizeof(u64)),
        queue_(current_queue()), data_(static_cast<u64*>(pool.allocate(bytes_, queue_))) {}
  ~Scratch() { pool_.release(data_, bytes_, queue_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  u64* data() const { return data_; }

 private:
  CudaPool& pool_;
  std::size_t bytes_;
  QueueHandle queue_;
  u64* data_;
};

// ===========================================================================
// Launch geometry

constexpr unsigned kMaxThreads = 256;

struct Geometry {
  dim3 grid, block;
  int log_n;
};

int log2_exact(std::size_t n) {
  int l = 0;
  while ((std::size_t{1} << l) < n) ++l;
  return l;
}

// x: coefficients of one limb, y: `limbs`, z: `batch` polynomials.
Geometry coeff_geometry(std::size_t n, std::size_t limbs, std::size_t batch) {
  if (batch > 65535 || limbs > 65535)
    throw_not_supported("cuda.launch", "batch and limb counts above 65535 need a chunked launch");
  const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(kMaxThreads, n));
  return {dim3(static_cast<unsigned>(n / threads), static_cast<unsigned>(limbs), static_cast<unsigned>(batch)),
          dim3(threads), log2_exact(n)};
}

// Coefficient j, the limb and the word offset of this thread's element.
struct Coord {
  std::size_t j, limb, index;
};

__device__ __forceinline__ Coord coord(int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t limb = blockIdx.y;
  const std::size_t row = blockIdx.z * static_cast<std::size_t>(gridDim.y) + limb;
  return {j, limb, (row << log_n) | j};
}

}  // namespace
}  // namespace ringfire::cuda
