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

// Where a pass writes its limbs: row (poly, limb) of the destination is
// poly * (limbs + len) + limb, plus len from limb at + poly * step on. {any, 0}
// is the plain layout; key switching's ModUp writes its converted limbs around
// the digit's own this way (the last pass stores them in place, no scatter).
struct LimbGap {
  unsigned at = 0, len = 0;
  unsigned step = 0;       // polynomial p's gap starts at `at + p * step`
  unsigned per_poly = 0;   // 1: polynomial p's limb constants start at p * limbs
};

// kStages / kLogCols: the pass's shape as compile-time constants, for the
// full 2^11-word tiles every pass of N = 2^12..2^17 has (plan_ntt_passes):
// the stage loop unrolls and its index arithmetic folds into constant
// shifts (the run-time shape spent ~40 instructions setting up each stage
// pair). kStages = 0 reads the shape from `pass` (smaller N, and the
// NttKernel::generic baseline). The butterflies and their order are the
// same either way.
//
// A tile's work in three steps: its loads (asynchronous copies into shared
// memory), its stages, and its store. Offsets within one polynomial fit 32
// bits (N <= 2^17): only the row base is 64-bit, so the per-butterfly index
// arithmetic stays in 32-bit instructions (64-bit shifts by a variable cost
// several each). The addressing is NttPass's (kernel_bodies.h), spelled out
// in 32 bits.
template <int kStages, int kLogCols>
struct TileShape {
  static constexpr bool kFixed = kStages > 0;
  static_assert(!kFixed || kStages + kLogCols == kernel::kLogTile, "fixed shapes are full tiles");
  int stages;
  unsigned log_cols, log_stride, cols_mask, elements, slots;
  __device__ explicit TileShape(const kernel::NttPass& pass)
      : stages(kFixed ? kStages : pass.stages),
        log_cols(kFixed ? kLogCols : static_cast<unsigned>(pass.log_cols)),
        log_stride(static_cast<unsigned>(pass.log_stride)),
        cols_mask((1u << log_cols) - 1),
        elements(1u << (stages + log_cols)),
        slots(1u << stages) {}
  // Offset in the polynomial of the tile's element e (row-major).
  __device__ unsigned element(unsigned origin, unsigned e) const {
    return origin + ((e >> log_cols) << log_stride) + (e & cols_mask);
  }
  // Runs body(u) for u in [0, count), spread over the block's threads. A
  // fixed shape has 512 threads and count a multiple of 512: a loop of known
  // trip count, unrolled.
  template <typename Body>
  __device__ static void for_each(unsigned count, Body&& body) {
    if constexpr (kFixed) {
#pragma unroll
      for (unsigned k = 0; k < count / kPassThreads; ++k) body(threadIdx.x + k * kPassThreads);
    } else {
      for (unsigned u = threadIdx.x; u < count; u += blockDim.x) body(u);
    }
  }
};

// A thread has at most kPerThread words and twiddles: elements <= 4
// threads (plan: threads = min(512, elements / 2)) and slots <= elements.
constexpr unsigned kPerThread = (1u << kernel::kLogTile) / kPassThreads;
// The block's twiddles (slot i at tw[i - 1], NttPass::twiddle_slot): read
// once per block with the data instead of from the global table inside the
// stages, where each read stalled its warp (Nsight Compute: L1TEX
// scoreboard stalls were ~37 % of the cycles, the table missing L2 at
// 64 limbs).
constexpr std::size_t kTileWords = std::size_t{1} << kernel::kLogTile;
constexpr std::size_t kTileTwiddles = kTileWords - 1;

// Issues the tile's loads as asynchronous copies straight into shared
// memory (no registers, no wait between them): its words when `data`, and
// its twiddles. The caller commits and waits.
template <int kStages, int kLogCols>
__device__ __forceinline__ void issue_tile_loads(const TileShape<kStages, kLogCols>& shape, u64* tile, ulonglong2* tw,
                                                 const u64* src, bool data, const ulonglong2* table,
                                                 const kernel::NttPass& pass, unsigned origin, int log_n) {
  if (data) {
#pragma unroll
    for (unsigned k = 0; k < kPerThread; ++k) {
      const unsigned e = threadIdx.x + k * blockDim.x;
      if (e < shape.elements) __pipeline_memcpy_async(&tile[e], &src[shape.element(origin, e)], sizeof(u64));
    }
  }
#pragma unroll
  for (unsigned k = 0; k < kPerThread; ++k) {
    const unsigned slot = 1 + threadIdx.x + k * blockDim.x;
    if (slot < shape.slots) {
      const unsigned rel = 31 - __clz(slot);  // NttPass::twiddle_slot_source in 32 bits
      const int s = pass.first_stage + static_cast<int>(rel);
      const unsigned w = (1u << s) + (origin >> (log_n - s)) + (slot - (1u << rel));
      __pipeline_memcpy_async(&tw[slot - 1], &table[w], sizeof(ulonglong2));
    }
  }
}

// The tile's stages in shared memory, ending with a barrier.
template <bool Forward, int kStages, int kLogCols>
__device__ __forceinline__ void run_tile_stages(const TileShape<kStages, kLogCols>& shape, u64* tile,
                                                const ulonglong2* tw, const kernel::NttPass& pass,
                                                const LimbConstants& lc) {
  const u64 q = lc.modulus.value();
  const int stages = shape.stages;
  const unsigned log_cols = shape.log_cols, cols_mask = shape.cols_mask, elements = shape.elements;
  // Stages are counted within the pass (k = s - first_stage, k < stages);
  // the twiddle of relative stage k at tile row `row` (NttPass::twiddle_slot).
  auto twiddle = [&](int k, unsigned row) { return tw[(1u << k) + (row >> (stages - k)) - 1]; };
  // The inverse's stage 0 (global) folds in 1/N.
  const bool ends_at_zero = !Forward && pass.first_stage == 0;
  using Shape = TileShape<kStages, kLogCols>;

  // Stages go in pairs (radix 4): each thread loads four words of the tile,
  // runs two stages in registers and stores them back, so a pair costs one
  // barrier and one shared-memory round trip instead of two. Every word sees
  // the same butterflies in the same order as in the radix-2 schedule, so the
  // result is unchanged bit for bit. A pass with an odd stage count runs its
  // last stage (forward) or first stage (inverse, ending at stage 0) alone.
#pragma unroll
  for (int pair = 0; pair < stages / 2; ++pair) {
    // Relative stages (k, k + 1): distances 2d and d rows, d = 2^log_d.
    const int k = Forward ? 2 * pair : stages - 2 - 2 * pair;
    const unsigned log_d = static_cast<unsigned>(stages - k - 2);
    const unsigned d_mask = (1u << log_d) - 1;
    const bool last_inverse = ends_at_zero && k == 0;
    Shape::for_each(elements / 4, [&](unsigned u) {
      const unsigned c = u & cols_mask, p = u >> log_cols;
      const unsigned r0 = ((p >> log_d) << (log_d + 2)) | (p & d_mask);
      const unsigned e0 = (r0 << log_cols) | c, step = 1u << (log_d + log_cols);
      u64 x0 = tile[e0], x1 = tile[e0 + step], x2 = tile[e0 + 2 * step], x3 = tile[e0 + 3 * step];
      const ulonglong2 wb = twiddle(k + 1, r0), wc = twiddle(k + 1, r0 + (2u << log_d));
      if constexpr (Forward) {
        const ulonglong2 wa = twiddle(k, r0);
        kernel::ct_butterfly(x0, x2, wa.x, wa.y, q);
        kernel::ct_butterfly(x1, x3, wa.x, wa.y, q);
        kernel::ct_butterfly(x0, x1, wb.x, wb.y, q);
        kernel::ct_butterfly(x2, x3, wc.x, wc.y, q);
      } else {
        kernel::gs_butterfly(x0, x1, wb.x, wb.y, q);
        kernel::gs_butterfly(x2, x3, wc.x, wc.y, q);
        if (last_inverse) {
          kernel::gs_last_butterfly(x0, x2, lc.n_inv, lc.last_n_inv, q);
          kernel::gs_last_butterfly(x1, x3, lc.n_inv, lc.last_n_inv, q);
        } else {
          const ulonglong2 wa = twiddle(k, r0);
          kernel::gs_butterfly(x0, x2, wa.x, wa.y, q);
          kernel::gs_butterfly(x1, x3, wa.x, wa.y, q);
        }
      }
      tile[e0] = x0;
      tile[e0 + step] = x1;
      tile[e0 + 2 * step] = x2;
      tile[e0 + 3 * step] = x3;
    });
    __syncthreads();
  }
  if (stages % 2 != 0) {
    const int k = Forward ? stages - 1 : 0;
    const unsigned log_dist = static_cast<unsigned>(stages - 1 - k);  // in rows
    const unsigned dist_mask = (1u << log_dist) - 1;
    Shape::for_each(elements / 2, [&](unsigned b) {
      const unsigned c = b & cols_mask, pr = b >> log_cols;
      const unsigned row = ((pr >> log_dist) << (log_dist + 1)) | (pr & dist_mask);  // butterfly_first
      const unsigned ex = (row << log_cols) | c;
      const unsigned ey = ex + (1u << (log_dist + log_cols));
      u64 x = tile[ex], y = tile[ey];
      if (Forward || !ends_at_zero) {
        const ulonglong2 w = twiddle(k, row);
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
    });
    __syncthreads();
  }
}

// Writes the tile back, fully reduced after the forward transform's last stage.
template <bool Forward, int kStages, int kLogCols>
__device__ __forceinline__ void store_tile(const TileShape<kStages, kLogCols>& shape, const u64* tile, u64* dst,
                                           const kernel::NttPass& pass, unsigned origin, u64 q, int log_n) {
  const bool reduce = Forward && pass.first_stage + shape.stages == log_n;
  TileShape<kStages, kLogCols>::for_each(shape.elements, [&](unsigned e) {
    const u64 v = tile[e];
    dst[shape.element(origin, e)] = reduce ? kernel::reduce_4q(v, q) : v;
  });
}

// Where row (poly, limb) of a batch is read, written and its constants.
struct TileRow {
  std::size_t base, out_row;
  const LimbConstants* lc;
};
__device__ __forceinline__ TileRow tile_row(unsigned poly, unsigned limb, unsigned limbs, const LimbConstants* lcs,
                                            const LimbGap& gap) {
  return {(poly * static_cast<std::size_t>(limbs) + limb),
          kernel::gapped_row(poly, limb, limbs, gap.at, gap.step, gap.len),
          &lcs[limb + (gap.per_poly != 0 ? poly * limbs : 0u)]};
}

// One block, one tile: load, wait, stages, store. 512 threads x 2
// butterflies per stage; 16 KiB of data and 32 KiB of twiddles, within the
// 48 KiB of static shared memory. A double-buffered variant (a block
// loading its next tile while transforming this one, two blocks an SM) was
// measured 14-17 % slower at 32-64 limbs on an H200: the passes are bound
// by issuing instructions, and it cut the resident warps from 48 to 32 an SM.
//
// limb_major: the grid's y is the polynomial and z the limb (else y the limb,
// z the polynomial). Blocks run in grid order, so limb-major puts every
// polynomial of a batch at one limb next to each other and the limb's
// twiddle table (1 MiB at N = 2^16, read whole by the tail pass) is read from
// DRAM once per batch instead of once per polynomial.
template <bool Forward, int MinBlocks, int kStages, int kLogCols>
__global__ void __launch_bounds__(kPassThreads, MinBlocks)
    ntt_pass_kernel(const u64* src, const u64* src2, u64* dst, const LimbConstants* limbs, int log_n,
                    kernel::NttPass pass, LimbGap gap, bool limb_major) {
  __shared__ u64 tile[kTileWords];
  __shared__ ulonglong2 tw[kTileTwiddles];
  const unsigned poly = limb_major ? blockIdx.y : blockIdx.z, limb = limb_major ? blockIdx.z : blockIdx.y;
  const TileRow row = tile_row(poly, limb, limb_major ? gridDim.z : gridDim.y, limbs, gap);
  src += row.base << log_n;
  dst += row.out_row << log_n;
  if (src2 != nullptr) src2 += row.base << log_n;
  const LimbConstants& lc = *row.lc;
  const Modulus mod = lc.modulus;
  const TileShape<kStages, kLogCols> shape(pass);
  const unsigned origin = static_cast<unsigned>(pass.block_origin(blockIdx.x, log_n));

  // Every load of the block in flight at once, then one wait.
  issue_tile_loads(shape, tile, tw, src, src2 == nullptr, Forward ? lc.forward : lc.inverse, pass, origin, log_n);
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
        if (e < shape.elements) {
          a[k] = src[shape.element(origin, e)];
          b[k] = src2[shape.element(origin, e)];
        }
      }
#pragma unroll
      for (unsigned k = 0; k < 2; ++k) {
        const unsigned e = threadIdx.x + (k0 + k) * blockDim.x;
        if (e < shape.elements) tile[e] = mul_mod(a[k], b[k], mod);
      }
    }
  }
  __pipeline_wait_prior(0);
  __syncthreads();
  run_tile_stages<Forward>(shape, tile, tw, pass, lc);
  store_tile<Forward>(shape, tile, dst, pass, origin, mod.value(), log_n);
}

// The pass kernels of one direction and register cap: the fixed shapes of
// full tiles (a head pass of 1..6 stages, the 11-stage tail) and the
// run-time shape (kStages = 0).
template <bool Forward, int MinBlocks>
struct PassKernels {
  using Fn = void (*)(const u64*, const u64*, u64*, const LimbConstants*, int, kernel::NttPass, LimbGap, bool);
  static constexpr Fn generic = ntt_pass_kernel<Forward, MinBlocks, 0, 0>;
  static Fn fixed(const kernel::NttPass& pass) {
    if (pass.stages + pass.log_cols != kernel::kLogTile) return nullptr;
    switch (pass.stages) {
      case 1: return ntt_pass_kernel<Forward, MinBlocks, 1, 10>;
      case 2: return ntt_pass_kernel<Forward, MinBlocks, 2, 9>;
      case 3: return ntt_pass_kernel<Forward, MinBlocks, 3, 8>;
      case 4: return ntt_pass_kernel<Forward, MinBlocks, 4, 7>;
      case 5: return ntt_pass_kernel<Forward, MinBlocks, 5, 6>;
      case 6: return ntt_pass_kernel<Forward, MinBlocks, 6, 5>;
      case 11: return ntt_pass_kernel<Forward, MinBlocks, 11, 0>;
      default: return nullptr;
    }
  }
  // Every kernel above, for per-kernel attributes.
  template <typename F>
  static void for_all(F&& f) {
    f(generic);
    for (int stages : {1, 2, 3, 4, 5, 6, 11}) {
      kernel::NttPass p;
      p.stages = stages;
      p.log_cols = kernel::kLogTile - stages;
      f(fixed(p));
    }
  }
};

using PassFn = PassKernels<true, 2>::Fn;

// The kernel for `pass`: its fixed shape where there is one and `fixed`,
// else the run-time shape.
template <bool Forward, int MinBlocks>
PassFn pass_kernel(const kernel::NttPass& pass, bool fixed) {
  const PassFn fn = fixed ? PassKernels<Forward, MinBlocks>::fixed(pass) : nullptr;
  return fn != nullptr ? fn : PassKernels<Forward, MinBlocks>::generic;
}

}  // namespace

void configure_ntt_kernels() {
  const auto max_shared = static_cast<int>(cudaSharedmemCarveoutMaxShared);
  auto carveout = [&](auto fn) {
    check(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, max_shared), "cuda.backend");
  };
  PassKernels<true, 2>::for_all(carveout);
  PassKernels<false, 2>::for_all(carveout);
  PassKernels<true, 3>::for_all(carveout);
  PassKernels<false, 3>::for_all(carveout);
}

// --- NTT --------------------------------------------------------------------

void CudaBackend::transform(const u64* src, const u64* src2, u64* dst, std::size_t batch, const RnsBase& base,
                            bool forward, const GappedOutput& gapped) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const LimbConstants* lc = gapped.constants != nullptr ? gapped.constants : limb_constants(base);
  const std::size_t n = base.n(), limbs = base.size();
  const int log_n = log2_exact(n);
  (void)coeff_geometry(n, limbs, batch);  // validates the grid's y/z ranges
  const dim3 rows(1, static_cast<unsigned>(limbs), static_cast<unsigned>(batch));
  // The pass kernels' rows limb-major when a batch has several polynomials.
  const bool limb_major = ntt_limb_major_ && batch > 1;
  const dim3 pass_rows = limb_major ? dim3(1, rows.z, rows.y) : rows;

  if (ntt_kernel_ == NttKernel::radix2) {
    require(gapped.out == nullptr && gapped.constants == nullptr, "cuda.ntt",
            "the radix-2 baseline writes no gapped limbs");
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
    const dim3 grid(static_cast<unsigned>(pass.blocks()), pass_rows.y, pass_rows.z);
    // Large batches: cap registers so three 512-thread blocks stay resident per
    // SM (measured 10-13 % faster at 32-64 limbs, N = 2^16-2^17); a grid too
    // small to fill the GPU keeps the uncapped build (no spills; lower latency).
    // Four blocks (32 registers, no spills) measured 1-5 % faster on one
    // transform and no faster in key switching (BENCHMARKS.md, 2026-12-04).
    const bool fills_gpu = std::size_t{grid.x} * grid.y * grid.z >= 3 * static_cast<std::size_t>(sm_count_);
    const bool fixed = ntt_kernel_ == NttKernel::shared;
    const PassFn fn = fills_gpu ? (forward ? pass_kernel<true, 3>(pass, fixed) : pass_kernel<false, 3>(pass, fixed))
                                : (forward ? pass_kernel<true, 2>(pass, fixed) : pass_kernel<false, 2>(pass, fixed));
    const bool last = step == count - 1;
    u64* out = last && gapped.out != nullptr ? gapped.out : dst;
    LimbGap gap;
    if (last && gapped.out != nullptr) gap = {gapped.gap_at, gapped.gap_len, gapped.gap_step};
    gap.per_poly = gapped.constants != nullptr ? 1u : 0u;
    fn<<<grid, threads, 0, launch_stream()>>>(src, forward ? nullptr : src2, out, lc, log_n, pass, gap, limb_major);
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

void CudaBackend::ntt_inverse_into(const u64* src, u64* dst, std::size_t batch, const RnsBase& base) {
  transform(src, nullptr, dst, batch, base, false);  // the first pass reads src: no copy
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
