// The NTT: the radix-2 baseline and the shared-memory pass kernels, the
// transform driver, ntt_forward / ntt_inverse and poly_multiply.
#include "cuda_backend.h"
#include "device.h"
#include "elementwise.h"
#include "launch.h"

#include <cuda_pipeline.h>

#include <algorithm>
#include <cstddef>

#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

// ===========================================================================
// NTT kernels

// Baseline: one radix-2 stage over all (poly, limb) pairs, one butterfly per
// thread, in global memory. A transform reads and writes the data log2(N)
// times (for N = 2^16: 16 x 1 MiB of traffic per limb).
template <bool Forward>
__global__ void ntt_radix2_stage_kernel(const u64* src, u64* dst, const LimbConstants* limbs, int log_n, int s) {
  const std::size_t b = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t base = (blockIdx.z * static_cast<std::size_t>(gridDim.y) + blockIdx.y) << log_n;
  const LimbConstants& lc = limbs[blockIdx.y];
  const u64 q = lc.modulus.value();
  const int log_dist = log_n - s - 1;
  const std::size_t i = kernel::butterfly_first(b, log_dist);
  const std::size_t k = i + (std::size_t{1} << log_dist);
  u64 x = src[base + i], y = src[base + k];
  if constexpr (Forward) {
    const ulonglong2 w = lc.forward[kernel::twiddle_index(i, s, log_n)];
    kernel::ct_butterfly(x, y, w.x, w.y, q);
    if (s == log_n - 1) {
      x = kernel::reduce_4q(x, q);
      y = kernel::reduce_4q(y, q);
    }
  } else {
    if (s == 0) {
      kernel::gs_last_butterfly(x, y, lc.n_inv, lc.last_n_inv, q);
    } else {
      const ulonglong2 w = lc.inverse[kernel::twiddle_index(i, s, log_n)];
      kernel::gs_butterfly(x, y, w.x, w.y, q);
    }
  }
  dst[base + i] = x;
  dst[base + k] = y;
}

// Fast path (seed 000 §V-B, seed 002 §V): a pass loads a tile of 2^11 words
// (16 KiB) into shared memory, runs several stages there with one barrier
// per stage, and writes it back, so N <= 2^17 costs two reads and two writes
// of the data instead of log2(N). The head pass is strided (rows 2^11 / cols
// apart, >= 32 adjacent columns per row so every warp access is 256
// contiguous bytes: the 2D decomposition of seed 002); the tail pass is a
// contiguous tile. Consecutive threads take consecutive columns (or, in the
// tail, consecutive butterflies), so shared-memory accesses are conflict-free
// apart from the smallest distances of the tail.
// 512 threads x 2 butterflies per stage; 16 KiB of data and 32 KiB of
// twiddles per block, so the shared memory of an sm_90 SM (228 KiB) holds 4
// blocks and registers, not shared memory, bound the residency.
constexpr unsigned kPassThreads = 512;

template <bool Forward, int MinBlocks>
__global__ void __launch_bounds__(kPassThreads, MinBlocks)
    ntt_pass_kernel(const u64* src, const u64* src2, u64* dst, const LimbConstants* limbs, int log_n,
                    kernel::NttPass pass) {
  __shared__ u64 tile[std::size_t{1} << kernel::kLogTile];
  // The block's twiddles (slot i at tw[i - 1], NttPass::twiddle_slot): read
  // once per block with the data instead of from the global table inside the
  // stages, where each read stalled its warp (Nsight Compute: L1TEX
  // scoreboard stalls were ~37 % of the cycles, the table missing L2 at
  // 64 limbs). 16 + 32 KiB stays within the 48 KiB of static shared memory.
  __shared__ ulonglong2 tw[(std::size_t{1} << kernel::kLogTile) - 1];
  // Offsets within one polynomial fit 32 bits (N <= 2^17): only the row base
  // is 64-bit, so the per-butterfly index arithmetic stays in 32-bit
  // instructions (64-bit shifts by a variable cost several each). The
  // addressing is NttPass's (kernel_bodies.h), spelled out in 32 bits.
  const std::size_t base = (blockIdx.z * static_cast<std::size_t>(gridDim.y) + blockIdx.y) << log_n;
  src += base;
  dst += base;
  if (src2 != nullptr) src2 += base;
  const LimbConstants& lc = limbs[blockIdx.y];
  const Modulus mod = lc.modulus;
  const u64 q = mod.value();
  const unsigned origin = static_cast<unsigned>(pass.block_origin(blockIdx.x, log_n));
  const unsigned log_cols = static_cast<unsigned>(pass.log_cols), log_stride = static_cast<unsigned>(pass.log_stride);
  const unsigned cols_mask = (1u << log_cols) - 1;
  const unsigned elements = 1u << (pass.stages + pass.log_cols);
  const unsigned slots = 1u << pass.stages;
  const ulonglong2* table = Forward ? lc.forward : lc.inverse;
  auto element = [&](unsigned e) { return origin + ((e >> log_cols) << log_stride) + (e & cols_mask); };

  // Every load of the block in flight at once: asynchronous copies straight
  // into shared memory (no registers, no wait between them), then one wait.
  // A thread has at most kPerThread words and twiddles: elements <= 4
  // threads (plan: threads = min(512, elements / 2)) and slots <= elements.
  constexpr unsigned kPerThread = (1u << kernel::kLogTile) / kPassThreads;
  if (src2 == nullptr) {
#pragma unroll
    for (unsigned k = 0; k < kPerThread; ++k) {
      const unsigned e = threadIdx.x + k * blockDim.x;
      if (e < elements) __pipeline_memcpy_async(&tile[e], &src[element(e)], sizeof(u64));
    }
  }
#pragma unroll
  for (unsigned k = 0; k < kPerThread; ++k) {
    const unsigned slot = 1 + threadIdx.x + k * blockDim.x;
    if (slot < slots) {
      const unsigned rel = 31 - __clz(slot);  // NttPass::twiddle_slot_source in 32 bits
      const int s = pass.first_stage + static_cast<int>(rel);
      const unsigned w = (1u << s) + (origin >> (log_n - s)) + (slot - (1u << rel));
      __pipeline_memcpy_async(&tw[slot - 1], &table[w], sizeof(ulonglong2));
    }
  }
  __pipeline_commit();
  if (src2 != nullptr) {
    // Fused Hadamard product (seed 002): the inverse of a product reads both
    // factors here instead of a separate multiply pass over memory. Loads go
    // two words at a time, then their products, so four loads overlap
    // (four at a time spilled under the three-block register cap).
#pragma unroll
    for (unsigned k0 = 0; k0 < kPerThread; k0 += 2) {
      u64 a[2], b[2];
#pragma unroll
      for (unsigned k = 0; k < 2; ++k) {
        const unsigned e = threadIdx.x + (k0 + k) * blockDim.x;
        if (e < elements) {
          a[k] = src[element(e)];
          b[k] = src2[element(e)];
        }
      }
#pragma unroll
      for (unsigned k = 0; k < 2; ++k) {
        const unsigned e = threadIdx.x + (k0 + k) * blockDim.x;
        if (e < elements) tile[e] = mul_mod(a[k], b[k], mod);
      }
    }
  }
  __pipeline_wait_prior(0);
  __syncthreads();

  const int last_stage = pass.first_stage + pass.stages - 1;
  // The twiddle of stage s at tile row `row` (NttPass::twiddle_slot in 32 bits).
  auto twiddle = [&](int s, unsigned row) {
    return tw[(1u << (s - pass.first_stage)) + (row >> (last_stage + 1 - s)) - 1];
  };

  // Stages go in pairs (radix 4): each thread loads four words of the tile,
  // runs two stages in registers and stores them back, so a pair costs one
  // barrier and one shared-memory round trip instead of two. Every word sees
  // the same butterflies in the same order as in the radix-2 schedule, so the
  // result is unchanged bit for bit. A pass with an odd stage count runs its
  // last stage (forward) or first stage (inverse, ending at stage 0) alone.
  int lo = Forward ? pass.first_stage : last_stage;  // next stage to run
  for (int done = 0; done < pass.stages;) {
    const bool pair = done + 1 < pass.stages;
    if (pair) {
      // Stages (s_lo, s_lo + 1): distances 2d and d rows, d = 2^log_d.
      const int s_lo = Forward ? lo : lo - 1;
      const unsigned log_d = static_cast<unsigned>(last_stage - s_lo - 1);
      const unsigned d_mask = (1u << log_d) - 1;
      for (unsigned u = threadIdx.x; u < elements / 4; u += blockDim.x) {
        const unsigned c = u & cols_mask, p = u >> log_cols;
        const unsigned r0 = ((p >> log_d) << (log_d + 2)) | (p & d_mask);
        const unsigned e0 = (r0 << log_cols) | c, step = 1u << (log_d + log_cols);
        u64 x0 = tile[e0], x1 = tile[e0 + step], x2 = tile[e0 + 2 * step], x3 = tile[e0 + 3 * step];
        const ulonglong2 wa = twiddle(s_lo, r0), wb = twiddle(s_lo + 1, r0), wc = twiddle(s_lo + 1, r0 + (2u << log_d));
        if constexpr (Forward) {
          kernel::ct_butterfly(x0, x2, wa.x, wa.y, q);
          kernel::ct_butterfly(x1, x3, wa.x, wa.y, q);
          kernel::ct_butterfly(x0, x1, wb.x, wb.y, q);
          kernel::ct_butterfly(x2, x3, wc.x, wc.y, q);
        } else {
          kernel::gs_butterfly(x0, x1, wb.x, wb.y, q);
          kernel::gs_butterfly(x2, x3, wc.x, wc.y, q);
          if (s_lo == 0) {
            kernel::gs_last_butterfly(x0, x2, lc.n_inv, lc.last_n_inv, q);
            kernel::gs_last_butterfly(x1, x3, lc.n_inv, lc.last_n_inv, q);
          } else {
            kernel::gs_butterfly(x0, x2, wa.x, wa.y, q);
            kernel::gs_butterfly(x1, x3, wa.x, wa.y, q);
          }
        }
        tile[e0] = x0;
        tile[e0 + step] = x1;
        tile[e0 + 2 * step] = x2;
        tile[e0 + 3 * step] = x3;
      }
      lo += Forward ? 2 : -2;
      done += 2;
    } else {
      const int s = lo;
      const unsigned log_dist = static_cast<unsigned>(last_stage - s);  // in rows
      const unsigned dist_mask = (1u << log_dist) - 1;
      for (unsigned b = threadIdx.x; b < elements / 2; b += blockDim.x) {
        const unsigned c = b & cols_mask, pr = b >> log_cols;
        const unsigned row = ((pr >> log_dist) << (log_dist + 1)) | (pr & dist_mask);  // butterfly_first
        const unsigned ex = (row << log_cols) | c;
        const unsigned ey = ex + (1u << (log_dist + log_cols));
        u64 x = tile[ex], y = tile[ey];
        if (Forward || s != 0) {
          const ulonglong2 w = twiddle(s, row);
          if constexpr (Forward) {
            kernel::ct_butterfly(x, y, w.x, w.y, q);
          } else {
            kernel::gs_butterfly(x, y, w.x, w.y, q);
          }
        } else {
          kernel::gs_last_butterfly(x, y, lc.n_inv, lc.last_n_inv, q);
        }
        tile[ex] = x;
        tile[ey] = y;
      }
      lo += Forward ? 1 : -1;
      done += 1;
    }
    __syncthreads();
  }

  const bool reduce = Forward && last_stage == log_n - 1;
  for (unsigned e = threadIdx.x; e < elements; e += blockDim.x) {
    const u64 v = tile[e];
    dst[element(e)] = reduce ? kernel::reduce_4q(v, q) : v;
  }
}

}  // namespace

void configure_ntt_kernels() {
  const auto max_shared = static_cast<int>(cudaSharedmemCarveoutMaxShared);
  check(cudaFuncSetAttribute(ntt_pass_kernel<true, 2>, cudaFuncAttributePreferredSharedMemoryCarveout, max_shared),
        "cuda.backend");
  check(cudaFuncSetAttribute(ntt_pass_kernel<false, 2>, cudaFuncAttributePreferredSharedMemoryCarveout, max_shared),
        "cuda.backend");
  check(cudaFuncSetAttribute(ntt_pass_kernel<true, 3>, cudaFuncAttributePreferredSharedMemoryCarveout, max_shared),
        "cuda.backend");
  check(cudaFuncSetAttribute(ntt_pass_kernel<false, 3>, cudaFuncAttributePreferredSharedMemoryCarveout, max_shared),
        "cuda.backend");
}

// --- NTT --------------------------------------------------------------------

void CudaBackend::transform(const u64* src, const u64* src2, u64* dst, std::size_t batch, const RnsBase& base,
                            bool forward) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const std::size_t n = base.n(), limbs = base.size();
  const int log_n = log2_exact(n);
  (void)coeff_geometry(n, limbs, batch);  // validates the grid's y/z ranges
  const dim3 rows(1, static_cast<unsigned>(limbs), static_cast<unsigned>(batch));

  if (ntt_kernel_ == NttKernel::radix2) {
    if (src2 != nullptr) {  // the baseline keeps the Hadamard product separate
      const Geometry g = coeff_geometry(n, limbs, batch);
      elementwise_kernel<Op::multiply><<<g.grid, g.block, 0, launch_stream()>>>(src, src2, dst, lc, log_n);
      after_launch("hadamard");
      src = dst;
    }
    const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(kMaxThreads, n / 2));
    const dim3 grid(static_cast<unsigned>(n / 2 / threads), rows.y, rows.z);
    for (int step = 0; step < log_n; ++step) {
      const int s = forward ? step : log_n - 1 - step;
      if (forward)
        ntt_radix2_stage_kernel<true><<<grid, threads, 0, launch_stream()>>>(src, dst, lc, log_n, s);
      else
        ntt_radix2_stage_kernel<false><<<grid, threads, 0, launch_stream()>>>(src, dst, lc, log_n, s);
      after_launch(forward ? "ntt_forward_radix2" : "ntt_inverse_radix2");
      src = dst;
    }
    return;
  }

  kernel::NttPass passes[8];
  const int count = kernel::plan_ntt_passes(log_n, log_n, passes, 8);
  for (int step = 0; step < count; ++step) {
    const kernel::NttPass& pass = passes[forward ? step : count - 1 - step];
    const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(kPassThreads, pass.block_elements() / 2));
    const dim3 grid(static_cast<unsigned>(pass.blocks()), rows.y, rows.z);
    // Large batches: cap registers so three 512-thread blocks stay resident per
    // SM (measured 10-13 % faster at 32-64 limbs, N = 2^16-2^17); a grid too
    // small to fill the GPU keeps the uncapped build (no spills; lower latency).
    const bool fills_gpu = std::size_t{grid.x} * grid.y * grid.z >= 3 * static_cast<std::size_t>(sm_count_);
    if (fills_gpu) {
      if (forward)
        ntt_pass_kernel<true, 3><<<grid, threads, 0, launch_stream()>>>(src, nullptr, dst, lc, log_n, pass);
      else
        ntt_pass_kernel<false, 3><<<grid, threads, 0, launch_stream()>>>(src, src2, dst, lc, log_n, pass);
    } else if (forward) {
      ntt_pass_kernel<true, 2><<<grid, threads, 0, launch_stream()>>>(src, nullptr, dst, lc, log_n, pass);
    } else {
      ntt_pass_kernel<false, 2><<<grid, threads, 0, launch_stream()>>>(src, src2, dst, lc, log_n, pass);
    }
    after_launch(src2 != nullptr ? "ntt_inverse_hadamard" : forward ? "ntt_forward" : "ntt_inverse");
    src = dst;
    src2 = nullptr;
  }
}

void CudaBackend::ntt_forward(u64* data, std::size_t batch, const RnsBase& base) {
  transform(data, nullptr, data, batch, base, true);
}

void CudaBackend::ntt_inverse(u64* data, std::size_t batch, const RnsBase& base) {
  transform(data, nullptr, data, batch, base, false);
}

void CudaBackend::poly_multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base,
                                PolyMulMethod method) {
  // Karatsuba (seed 002 Alg. 7/8) takes the NTT path here: both produce the
  // fully reduced negacyclic product, so the result is bit-identical to the
  // CPU's Karatsuba; the fused last-stage kernel is future work.
  (void)method;
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const std::size_t words = batch * base.size() * base.n();
  Scratch ta(device_pool(device_), words), tb(device_pool(device_), words);
  // Out-of-place first passes read a and b directly (no copies), and the
  // inverse's first pass forms the Hadamard product on load.
  transform(a, nullptr, ta.data(), batch, base, true);
  transform(b, nullptr, tb.data(), batch, base, true);
  transform(ta.data(), tb.data(), out, batch, base, false);
}

}  // namespace ringfire::cuda
