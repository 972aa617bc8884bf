// The CUDA backend (see cuda_backend.h). Every kernel body is a function of
// ring/kernel_bodies.h or arith/ (RF_HD), which the CPU tests cover; what
// lives here is launch geometry, memory layout and fusion.
//
// Grid convention everywhere (Troy-nova / Phantom): x = coefficient (chunks
// of up to 256 threads, one coefficient each, so a warp reads 256 contiguous
// bytes), y = limb, z = polynomial. N is a power of two >= 4, so the x-grid
// covers a limb exactly and no division by N or by the limb count is needed.
//
// Nothing here synchronises the host: operations enqueue on the device's
// stream and return. The exceptions are one-time uploads of cached constant
// tables (first use of an (N, q) or a converter) and the debug mode
// RINGFIRE_CUDA_SYNC=1, which synchronises after every kernel so an error is
// reported by the launch that caused it.
#include "cuda_backend.h"
#include "registration.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "ringfire/arith/modular.h"
#include "ringfire/base/device_copy.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/fork.h"
#include "ringfire/base/op_label.h"
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

constexpr int kMaxDevices = 64;

// Makes `device` current for a scope and restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous_), "cuda.device");
    if (previous_ != device) check(cudaSetDevice(device), "cuda.device");
  }
  ~DeviceGuard() {
    int now = 0;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

[[noreturn]] void throw_no_device(const std::string& op, int index) {
  throw_not_supported(op, "cuda:" + std::to_string(index) + ": no usable CUDA device (this machine has " +
                              std::to_string(cuda_device_count()) +
                              " visible GPU(s)); the CUDA backend is compiled in but needs an NVIDIA GPU and driver. "
                              "Use device 'cpu'.");
}

}  // namespace

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

void CudaPool::raw_free(void* block) {
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

namespace {

// Host <-> device and device <-> device copies for Buffer::to. Uploads and
// peer copies wait for their own copy, so the data is ready for every
// stream (a value is uploaded once, lazily); a download waits for the whole
// device first, since the value may have been computed on any stream (a
// download is a sync point).
void cuda_copy(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes) {
  const bool to_host = dst_device.is_host(), from_host = src_device.is_host();
  const int index = to_host ? src_device.index : dst_device.index;
  CudaBackend& be = backend(index);
  DeviceGuard guard(index);
  const cudaStream_t s = be.stream();
  if (from_host) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "cuda.upload");
    check(cudaStreamSynchronize(s), "cuda.upload");
  } else if (to_host) {
    check(cudaDeviceSynchronize(), "cuda.download");
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "cuda.download");
    check(cudaStreamSynchronize(s), "cuda.download");
  } else if (src_device.index == dst_device.index) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cuda.copy");
  } else {
    // Between GPUs: the source's work must be done before the peer copy reads it.
    backend(src_device.index).synchronize();
    check(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, s), "cuda.peer_copy");
    check(cudaStreamSynchronize(s), "cuda.peer_copy");
  }
}


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

// ===========================================================================
// Element-wise kernels. One coefficient per thread: these are bandwidth
// bound (2-3 words moved per mul_mod), so the goal is full coalescing, not
// more work per thread.

enum class Op { add, sub, negate, multiply, multiply_add };

template <Op op>
__global__ void elementwise_kernel(const u64* a, const u64* b, u64* out, const LimbConstants* limbs, int log_n) {
  const Coord c = coord(log_n);
  const Modulus mod = limbs[c.limb].modulus;
  const u64 q = mod.value();
  const u64 x = a[c.index];
  if constexpr (op == Op::add) out[c.index] = add_mod(x, b[c.index], q);
  if constexpr (op == Op::sub) out[c.index] = sub_mod(x, b[c.index], q);
  if constexpr (op == Op::negate) out[c.index] = neg_mod(x, q);
  if constexpr (op == Op::multiply) out[c.index] = mul_mod(x, b[c.index], mod);
  if constexpr (op == Op::multiply_add) out[c.index] = kernel::multiply_add_body(x, b[c.index], out[c.index], mod);
}

// Per-limb scalars travel as a kernel parameter (2 KiB, well inside the
// 4 KiB parameter space): no upload, no host synchronisation.
constexpr std::size_t kParamLimbs = 128;
struct ScalarParams {
  ShoupOperand s[kParamLimbs];
};

template <bool Multiply>
__global__ void scalar_kernel(const u64* a, u64* out, ScalarParams params, const LimbConstants* limbs,
                              std::size_t limb0, std::size_t total_limbs, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t local = blockIdx.y, limb = limb0 + local;
  const std::size_t index = ((blockIdx.z * total_limbs + limb) << log_n) | j;
  const u64 q = limbs[limb].modulus.value();
  const ShoupOperand s = params.s[local];
  out[index] = Multiply ? kernel::multiply_scalar_body(a[index], s, q) : add_mod(a[index], s.value, q);
}

// Key-switching inner product: terms (digit, b, a) pointer triples travel as
// kernel parameters, kIpTerms per launch; later launches add to the output.
constexpr std::size_t kIpTerms = 32;
struct InnerProductParams {
  const u64* in[kIpTerms];
  const u64* b[kIpTerms];
  const u64* a[kIpTerms];
};

__global__ void inner_product_pair_kernel(InnerProductParams p, std::size_t terms, bool accumulate, u64* out0,
                                          u64* out1, const LimbConstants* limbs, int log_n) {
  const Coord c = coord(log_n);
  const Modulus mod = limbs[c.limb].modulus;
  u64 r0, r1;
  kernel::inner_product_pair_body(p.in, p.b, p.a, terms, c.index, mod, r0, r1);
  if (accumulate) {
    r0 = add_mod(r0, out0[c.index], mod.value());
    r1 = add_mod(r1, out1[c.index], mod.value());
  }
  out0[c.index] = r0;
  out1[c.index] = r1;
}

// One chunk of a linear combination: up to 32 terms (one lazy 128-bit sum,
// reduced once) for up to 8 limbs, with the pointers and weights passed as
// a kernel parameter (~2.3 KiB).
constexpr std::size_t kLcTerms = kernel::kLinearCombinationChunk;
constexpr std::size_t kLcLimbs = 8;
struct LinearParams {
  const u64* inputs[kLcTerms];
  u64 weights[kLcTerms * kLcLimbs];  // [t * kLcLimbs + local limb]
};

__global__ void linear_combination_kernel(LinearParams params, std::size_t terms, const u64* partial_in,
                                          u64* partial_out, const LimbConstants* limbs, std::size_t limb0,
                                          std::size_t total_limbs, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t local = blockIdx.y, limb = limb0 + local;
  const std::size_t index = ((blockIdx.z * total_limbs + limb) << log_n) | j;
  const Modulus mod = limbs[limb].modulus;
  u128 acc = 0;
  for (std::size_t t = 0; t < terms; ++t) {
    const u64 w = params.weights[t * kLcLimbs + local];
    if (w != 0) acc += mul_wide(params.inputs[t][index], w);
  }
  u64 r = reduce_u128(acc, mod);
  if (partial_in != nullptr) r = add_mod(partial_in[index], r, mod.value());
  partial_out[index] = r;
}

// ===========================================================================
// Automorphisms

// Coefficient form: thread i scatters x_i to its target (a bijection, so
// every output word is written once).
__global__ void automorphism_coeff_kernel(const u64* in, u64* out, const LimbConstants* limbs, u64 galois_elt,
                                          int log_n) {
  const Coord c = coord(log_n);
  bool negate = false;
  const std::size_t n = std::size_t{1} << log_n;
  const std::size_t target = kernel::automorphism_coeff_target(c.j, galois_elt, n, negate);
  const u64 x = in[c.index];
  out[(c.index - c.j) + target] = negate ? neg_mod(x, limbs[c.limb].modulus.value()) : x;
}

// Evaluation form: output slot s gathers its source slot (coalesced writes;
// the index map is recomputed per thread, cheaper than reading a table).
__global__ void automorphism_eval_kernel(const u64* in, u64* out, u64 galois_elt, int log_n) {
  const Coord c = coord(log_n);
  out[c.index] = in[(c.index - c.j) + kernel::automorphism_eval_source(c.j, galois_elt, log_n)];
}

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
// 512 threads x 2 butterflies per stage: 16 KiB per block lets 4 blocks
// (2048 threads) stay resident per SM on sm_80/sm_90.
constexpr unsigned kPassThreads = 512;

template <bool Forward, int MinBlocks>
__global__ void __launch_bounds__(kPassThreads, MinBlocks)
    ntt_pass_kernel(const u64* src, const u64* src2, u64* dst, const LimbConstants* limbs, int log_n,
                    kernel::NttPass pass) {
  __shared__ u64 tile[std::size_t{1} << kernel::kLogTile];
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

  for (unsigned e = threadIdx.x; e < elements; e += blockDim.x) {
    const unsigned g = origin + ((e >> log_cols) << log_stride) + (e & cols_mask);
    // Fused Hadamard product (seed 002): the inverse of a product reads both
    // factors here instead of a separate multiply pass over memory.
    tile[e] = src2 == nullptr ? src[g] : mul_mod(src[g], src2[g], mod);
  }
  __syncthreads();

  const int last_stage = pass.first_stage + pass.stages - 1;
  const ulonglong2* table = Forward ? lc.forward : lc.inverse;
  // Global index of tile row `row`, column `c`, and the twiddle of stage s there.
  auto global = [&](unsigned row, unsigned c) { return origin + (row << log_stride) + c; };
  auto twiddle = [&](int s, unsigned gi) { return table[(1u << s) + (gi >> (log_n - s))]; };

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
        const unsigned g0 = global(r0, c), g2 = global(r0 + (2u << log_d), c);
        const ulonglong2 wa = twiddle(s_lo, g0), wb = twiddle(s_lo + 1, g0), wc = twiddle(s_lo + 1, g2);
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
          const ulonglong2 w = twiddle(s, global(row, c));
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
    dst[origin + ((e >> log_cols) << log_stride) + (e & cols_mask)] = reduce ? kernel::reduce_4q(v, q) : v;
  }
}

// ===========================================================================
// Base conversion kernels (three passes, as the CPU)

// Pass 1: y_i = x_i (Q/q_i)^-1 mod q_i; grid y = source limb.
__global__ void base_convert_scale_kernel(const u64* in, u64* y, ConverterConstants cc, int log_n) {
  const Coord c = coord(log_n);
  y[c.index] = kernel::base_convert_scale_body(in[c.index], cc.qhat_inv[c.limb], cc.from[c.limb].value());
}

// Pass 2 (exact): v = round(sum_i y_i / q_i) in double; coefficients whose
// sum lies within 2^-36 of a half are appended to `flagged` for the
// multiword rule. Grid y = 1.
__global__ void base_convert_round_kernel(const u64* y, u64* v, ConverterConstants cc, std::size_t src,
                                          unsigned long long* flagged_count, u64* flagged, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t poly = blockIdx.z;
  const u64* yp = y + ((poly * src) << log_n) + j;
  double s = 0.0;
  for (std::size_t i = 0; i < src; ++i) s = kernel::base_convert_sum_step(s, yp[i << log_n], cc.reciprocal[i]);
  const std::size_t out = (poly << log_n) | j;
  if (kernel::base_convert_near_half(s)) {
    flagged[atomicAdd(flagged_count, 1ull)] = out;
    v[out] = 0;
  } else {
    v[out] = kernel::base_convert_rounded(s);
  }
}

// Pass 2b: the multiword rule for the flagged coefficients (rare: about
// 2^-35 of random inputs). A small fixed grid strides over the list; each
// thread owns src + 1 words of scratch in global memory, so no per-thread
// local arrays inflate every thread's stack.
constexpr unsigned kFixupBlocks = 16, kFixupThreads = 64;
__global__ void base_convert_fixup_kernel(const u64* y, u64* v, ConverterConstants cc, std::size_t src,
                                          const unsigned long long* flagged_count, const u64* flagged, u64* scratch,
                                          int log_n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  u64* acc = scratch + tid * (src + 1);
  const std::size_t count = *flagged_count;
  const std::size_t mask = (std::size_t{1} << log_n) - 1;
  for (std::size_t f = tid; f < count; f += stride) {
    const std::size_t out = flagged[f];
    const std::size_t poly = out >> log_n, j = out & mask;
    v[out] = kernel::exact_rounded_quotient(y + ((poly * src) << log_n) + j, std::size_t{1} << log_n, cc.qhat_words,
                                            cc.q_words, src, acc);
  }
}

// Pass 3: z_j = sum_i y_i (Q/q_i mod p_j) [- v Q] mod p_j. Each thread
// takes one coefficient and kSumTargets target limbs (grid y = target
// groups), so every y word is read once per group rather than once per
// target; the reads of y are coalesced across the warp and the constants
// are uniform (cached).
constexpr unsigned kSumTargets = 4;
__global__ void base_convert_sum_kernel(const u64* y, const u64* v, u64* out, ConverterConstants cc, std::size_t src,
                                        std::size_t dst, int log_n) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t n = std::size_t{1} << log_n, poly = blockIdx.z, t0 = blockIdx.y * std::size_t{kSumTargets};
  const unsigned count = static_cast<unsigned>(dst - t0 < kSumTargets ? dst - t0 : kSumTargets);
  const u64* yp = y + poly * src * n + j;
  u64 r[kSumTargets] = {};
  if (src <= kernel::kBaseConvShoupTerms) {
    for (std::size_t i = 0; i < src; ++i, yp += n) {
      const u64 yi = *yp;
#pragma unroll
      for (unsigned t = 0; t < kSumTargets; ++t)
        if (t < count)
          r[t] = kernel::base_convert_shoup_step(r[t], yi, cc.qhat_mod_p_shoup[(t0 + t) * src + i],
                                                 cc.to[t0 + t].value());
    }
#pragma unroll
    for (unsigned t = 0; t < kSumTargets; ++t) {
      const u64 pv = t < count ? cc.to[t0 + t].value() : 0;
      r[t] -= (t < count && r[t] >= pv) ? pv : 0;
    }
  } else {
    // Lazy 128-bit sums, reduced every kBaseConvLazyTerms source limbs.
    for (std::size_t i0 = 0; i0 < src; i0 += kernel::kBaseConvLazyTerms) {
      const std::size_t i1 = src - i0 < kernel::kBaseConvLazyTerms ? src : i0 + kernel::kBaseConvLazyTerms;
      u128 acc[kSumTargets] = {};
      for (std::size_t i = i0; i < i1; ++i, yp += n) {
        const u64 yi = *yp;
#pragma unroll
        for (unsigned t = 0; t < kSumTargets; ++t)
          if (t < count) acc[t] += mul_wide(yi, cc.qhat_mod_p[(t0 + t) * src + i]);
      }
#pragma unroll
      for (unsigned t = 0; t < kSumTargets; ++t)
        if (t < count) r[t] = add_mod(r[t], reduce_u128(acc[t], cc.to[t0 + t]), cc.to[t0 + t].value());
    }
  }
#pragma unroll
  for (unsigned t = 0; t < kSumTargets; ++t) {
    if (t >= count) continue;
    u64 z = r[t];
    if (v != nullptr) z = kernel::base_convert_subtract_vq(z, v[poly * n + j], cc.q_mod_p[t0 + t], cc.to[t0 + t]);
    out[(poly * dst + t0 + t) * n + j] = z;
  }
}

// The shared RF_HD arithmetic smoke test (cuda_mul_mod).
__global__ void mul_mod_kernel(const u64* a, const u64* b, u64* out, std::size_t n, Modulus mod) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = mul_mod(a[i], b[i], mod);
}

template <class T>
T* upload(const std::vector<T>& host, std::vector<void*>& owned) {
  T* device = nullptr;
  const std::size_t bytes = std::max<std::size_t>(host.size(), 1) * sizeof(T);
  check(cudaMalloc(&device, bytes), "cuda.upload");
  owned.push_back(device);
  if (!host.empty()) check(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cuda.upload");
  return device;
}

}  // namespace

// ===========================================================================
// The backend

CudaBackend::CudaBackend(int device) : device_(device) {
  DeviceGuard guard(device_);
  // Non-blocking: the stream never waits on the legacy default stream, so
  // other libraries' work there cannot serialise ours.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cuda.backend");
  check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_), "cuda.backend");
  const char* sync = std::getenv("RINGFIRE_CUDA_SYNC");
  sync_each_kernel_ = sync != nullptr && std::strcmp(sync, "0") != 0;
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  for (cudaEvent_t e : spare_events_) (void)cudaEventDestroy(e);
  for (void* p : owned_) (void)cudaFree(p);
}

std::string CudaBackend::name() const { return "cuda:" + std::to_string(device_); }

void CudaBackend::synchronize() {
  DeviceGuard guard(device_);
  check(cudaDeviceSynchronize(), "cuda.synchronize");
  device_pool(device_).settle();  // every queue is idle: cached blocks may move between them
}

cudaStream_t CudaBackend::stream() const {
  const QueueHandle queue = current_queue();
  return queue != 0 ? reinterpret_cast<cudaStream_t>(queue) : stream_;
}

cudaStream_t CudaBackend::launch_stream() {
  const cudaStream_t s = stream();
  if (profiling_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    if (pending_start_ == nullptr) {
      pending_start_ = take_event();
      check(cudaEventRecord(pending_start_, s), "cuda.profile");
    }
  }
  return s;
}

void CudaBackend::after_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
  const cudaStream_t s = stream();
  if (profiling_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    if (pending_start_ != nullptr) {
      cudaEvent_t stop = take_event();
      check(cudaEventRecord(stop, s), "cuda.profile");
      records_.push_back({kernel, current_op_label(), pending_start_, stop});
      pending_start_ = nullptr;
    }
  }
  if (sync_each_kernel_) check(cudaStreamSynchronize(s), kernel);
}

cudaEvent_t CudaBackend::take_event() {
  if (!spare_events_.empty()) {
    cudaEvent_t e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cuda.profile");
  return e;
}

void CudaBackend::start_profiling() {
  DeviceGuard guard(device_);
  std::lock_guard<std::mutex> lock(profile_mutex_);
  for (auto& r : records_) spare_events_.insert(spare_events_.end(), {r.start, r.stop});
  records_.clear();
  profiling_ = true;
}

std::vector<KernelRecord> CudaBackend::stop_profiling() {
  DeviceGuard guard(device_);
  check(cudaDeviceSynchronize(), "cuda.profile");
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiling_ = false;
  if (pending_start_ != nullptr) spare_events_.push_back(std::exchange(pending_start_, nullptr));
  std::vector<KernelRecord> out;
  out.reserve(records_.size());
  for (auto& r : records_) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r.start, r.stop), "cuda.profile");
    out.push_back({r.kernel, r.op, ms * 1e-3});
    spare_events_.insert(spare_events_.end(), {r.start, r.stop});
  }
  records_.clear();
  return out;
}

QueueHandle CudaBackend::create_stream() {
  DeviceGuard guard(device_);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cuda.stream");
  return reinterpret_cast<QueueHandle>(s);
}

void CudaBackend::destroy_stream(QueueHandle queue) {
  if (queue == 0) return;
  DeviceGuard guard(device_);
  auto s = reinterpret_cast<cudaStream_t>(queue);
  check(cudaStreamSynchronize(s), "cuda.stream");
  (void)cudaStreamDestroy(s);
}

const LimbConstants* CudaBackend::limb_constants(const RnsBase& base) {
  std::vector<u64> key{base.n()};
  for (const Modulus& m : base.moduli()) key.push_back(m.value());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (auto it = bases_.find(key); it != bases_.end()) return it->second;
  std::vector<LimbConstants> host(base.size());
  for (std::size_t l = 0; l < base.size(); ++l) {
    const NttTables& t = base.ntt(l);
    auto& entry = tables_[{t.n(), t.modulus().value()}];
    if (entry.first == nullptr) {
      // Twiddle and Shoup constant interleaved: one 16-byte load per butterfly.
      std::vector<ulonglong2> fwd(t.n()), inv(t.n());
      for (std::size_t i = 0; i < t.n(); ++i) {
        fwd[i] = make_ulonglong2(t.forward()[i], t.forward_shoup()[i]);
        inv[i] = make_ulonglong2(t.inverse()[i], t.inverse_shoup()[i]);
      }
      entry = {upload(fwd, owned_), upload(inv, owned_)};
    }
    host[l].forward = entry.first;
    host[l].inverse = entry.second;
    host[l].modulus = t.modulus();
    host[l].n_inv = t.n_inv();
    host[l].last_n_inv = t.last_twiddle_n_inv();
  }
  LimbConstants* device = upload(host, owned_);
  bases_[key] = device;
  return device;
}

const ConverterConstants& CudaBackend::converter_constants(const BaseConverter& conv) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  std::vector<u64> key{from.n(), from.size()};
  for (const Modulus& m : from.moduli()) key.push_back(m.value());
  for (const Modulus& m : to.moduli()) key.push_back(m.value());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (auto it = converters_.find(key); it != converters_.end()) return *it->second;
  const std::size_t src = from.size(), dst = to.size();
  std::vector<Modulus> from_mod(from.moduli()), to_mod(to.moduli());
  std::vector<ShoupOperand> inv(src), factors_shoup(src * dst);
  std::vector<double> recip(conv.q_reciprocal(), conv.q_reciprocal() + src);
  std::vector<u64> qhat_words(src * src), q_words(from.product()), factors(conv.qhat_mod_p(), conv.qhat_mod_p() + src * dst);
  std::vector<u64> q_mod_p(conv.q_mod_p(), conv.q_mod_p() + dst);
  for (std::size_t i = 0; i < src; ++i) {
    inv[i] = make_shoup(from.qhat_inverse(i), from.modulus(i).value());
    std::copy(from.qhat(i), from.qhat(i) + src, qhat_words.begin() + i * src);
  }
  for (std::size_t j = 0; j < dst; ++j)
    for (std::size_t i = 0; i < src; ++i)
      factors_shoup[j * src + i] = make_shoup(factors[j * src + i], to.modulus(j).value());
  auto cc = std::make_unique<ConverterConstants>();
  cc->from = upload(from_mod, owned_);
  cc->qhat_inv = upload(inv, owned_);
  cc->reciprocal = upload(recip, owned_);
  cc->qhat_words = upload(qhat_words, owned_);
  cc->q_words = upload(q_words, owned_);
  cc->to = upload(to_mod, owned_);
  cc->qhat_mod_p = upload(factors, owned_);
  cc->qhat_mod_p_shoup = upload(factors_shoup, owned_);
  cc->q_mod_p = upload(q_mod_p, owned_);
  return *(converters_[key] = std::move(cc));
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

// --- element-wise -------------------------------------------------------------

#define RF_ELEMENTWISE(OP, A, B, OUT, NAME)                                              \
  if (batch == 0) return;                                                            \
  DeviceGuard guard(device_);                                                        \
  const LimbConstants* lc = limb_constants(base);                                    \
  const Geometry g = coeff_geometry(base.n(), base.size(), batch);                   \
  elementwise_kernel<OP><<<g.grid, g.block, 0, launch_stream()>>>(A, B, OUT, lc, g.log_n); \
  after_launch(NAME)

void CudaBackend::add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::add, a, b, out, "add");
}
void CudaBackend::sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::sub, a, b, out, "sub");
}
void CudaBackend::negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::negate, a, nullptr, out, "negate");
}
void CudaBackend::multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::multiply, a, b, out, "multiply");
}
void CudaBackend::multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) {
  RF_ELEMENTWISE(Op::multiply_add, a, b, acc, "multiply_add");
}
#undef RF_ELEMENTWISE

namespace {

template <bool Multiply>
void launch_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base,
                   const LimbConstants* lc, cudaStream_t stream) {
  const std::size_t limbs = base.size();
  for (std::size_t l0 = 0; l0 < limbs; l0 += kParamLimbs) {
    const std::size_t count = std::min(kParamLimbs, limbs - l0);
    ScalarParams params{};
    for (std::size_t l = 0; l < count; ++l) {
      const u64 q = base.modulus(l0 + l).value();
      // Shoup's quotient is formed once per limb on the host (a 128-bit
      // division the device would otherwise repeat per thread).
      params.s[l] = Multiply ? make_shoup(scalars[l0 + l], q) : ShoupOperand{scalars[l0 + l], 0};
    }
    const Geometry g = coeff_geometry(base.n(), count, batch);
    scalar_kernel<Multiply><<<g.grid, g.block, 0, stream>>>(a, out, params, lc, l0, limbs, g.log_n);
  }
}

}  // namespace

void CudaBackend::multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                                  const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  launch_scalar<true>(a, scalars, out, batch, base, limb_constants(base), launch_stream());
  after_launch("multiply_scalar");
}

void CudaBackend::add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  launch_scalar<false>(a, scalars, out, batch, base, limb_constants(base), launch_stream());
  after_launch("add_scalar");
}

void CudaBackend::inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a,
                                     std::size_t terms, u64* out0, u64* out1, const RnsBase& base) {
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const Geometry g = coeff_geometry(base.n(), base.size(), 1);
  if (terms == 0) {
    zero(out0, base.size() * base.n());
    zero(out1, base.size() * base.n());
    return;
  }
  for (std::size_t t0 = 0; t0 < terms; t0 += kIpTerms) {
    const std::size_t chunk = std::min(kIpTerms, terms - t0);
    InnerProductParams params{};
    for (std::size_t t = 0; t < chunk; ++t) {
      params.in[t] = in[t0 + t];
      params.b[t] = b[t0 + t];
      params.a[t] = a[t0 + t];
    }
    inner_product_pair_kernel<<<g.grid, g.block, 0, launch_stream()>>>(params, chunk, t0 > 0, out0, out1, lc,
                                                                         g.log_n);
    after_launch("inner_product_pair");
  }
}

void CudaBackend::linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                                     std::size_t batch, const RnsBase& base) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const LimbConstants* lc = limb_constants(base);
  const std::size_t limbs = base.size(), n = base.n();
  if (terms == 0) {
    zero(out, batch * limbs * n);
    return;
  }
  // More than one chunk of terms: partial sums go to scratch, and only the
  // last chunk writes `out` (which may alias an input: each thread reads its
  // inputs at an element before writing that element).
  const bool chunked = terms > kLcTerms;
  std::unique_ptr<Scratch> partial;
  if (chunked) partial = std::make_unique<Scratch>(device_pool(device_), batch * limbs * n);
  for (std::size_t l0 = 0; l0 < limbs; l0 += kLcLimbs) {
    const std::size_t count = std::min(kLcLimbs, limbs - l0);
    const Geometry g = coeff_geometry(n, count, batch);
    for (std::size_t t0 = 0; t0 < terms; t0 += kLcTerms) {
      const std::size_t chunk = std::min(kLcTerms, terms - t0);
      LinearParams params{};
      for (std::size_t t = 0; t < chunk; ++t) {
        params.inputs[t] = inputs[t0 + t];
        for (std::size_t l = 0; l < count; ++l) params.weights[t * kLcLimbs + l] = weights[(t0 + t) * limbs + l0 + l];
      }
      const bool last = t0 + chunk == terms;
      const u64* in = t0 == 0 ? nullptr : partial->data();
      u64* dst = last ? out : partial->data();
      linear_combination_kernel<<<g.grid, g.block, 0, launch_stream()>>>(params, chunk, in, dst, lc, l0, limbs, g.log_n);
      after_launch("linear_combination");
    }
  }
}

void CudaBackend::copy(const u64* src, u64* dst, std::size_t words) {
  if (words == 0) return;
  DeviceGuard guard(device_);
  check(cudaMemcpyAsync(dst, src, words * sizeof(u64), cudaMemcpyDeviceToDevice, launch_stream()), "cuda.copy");
  after_launch("copy");
}

void CudaBackend::zero(u64* dst, std::size_t words) {
  if (words == 0) return;
  DeviceGuard guard(device_);
  check(cudaMemsetAsync(dst, 0, words * sizeof(u64), launch_stream()), "cuda.zero");
  after_launch("zero");
}

// --- base conversion and automorphisms ----------------------------------------

void CudaBackend::base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                               BaseConversion kind) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const ConverterConstants& cc = converter_constants(conv);
  const std::size_t n = conv.from().n(), src = conv.from().size(), dst = conv.to().size();
  CudaPool& pool = device_pool(device_);
  Scratch y(pool, batch * src * n);
  const Geometry g1 = coeff_geometry(n, src, batch);
  base_convert_scale_kernel<<<g1.grid, g1.block, 0, launch_stream()>>>(in, y.data(), cc, g1.log_n);
  after_launch("base_convert_scale");
  std::unique_ptr<Scratch> v;
  if (kind == BaseConversion::exact) {
    v = std::make_unique<Scratch>(pool, batch * n);
    // One allocation: the flagged count (word 0) and the flagged list.
    Scratch flagged(pool, 1 + batch * n);
    Scratch acc(pool, std::size_t{kFixupBlocks} * kFixupThreads * (src + 1));
    auto* count = reinterpret_cast<unsigned long long*>(flagged.data());
    check(cudaMemsetAsync(count, 0, sizeof(u64), launch_stream()), "cuda.base_convert");
    const Geometry g2 = coeff_geometry(n, 1, batch);
    base_convert_round_kernel<<<g2.grid, g2.block, 0, launch_stream()>>>(y.data(), v->data(), cc, src, count,
                                                                 flagged.data() + 1, g2.log_n);
    after_launch("base_convert_round");
    base_convert_fixup_kernel<<<kFixupBlocks, kFixupThreads, 0, launch_stream()>>>(y.data(), v->data(), cc, src, count,
                                                                          flagged.data() + 1, acc.data(), g2.log_n);
    after_launch("base_convert_fixup");
  }
  const Geometry g3 = coeff_geometry(n, (dst + kSumTargets - 1) / kSumTargets, batch);
  base_convert_sum_kernel<<<g3.grid, g3.block, 0, launch_stream()>>>(y.data(), v ? v->data() : nullptr, out, cc, src,
                                                                       dst, g3.log_n);
  after_launch("base_convert_sum");
}

void CudaBackend::automorphism(const u64* in, u64* out, std::size_t batch, const RnsBase& base, u64 galois_elt,
                               Form form) {
  if (batch == 0) return;
  DeviceGuard guard(device_);
  const Geometry g = coeff_geometry(base.n(), base.size(), batch);
  if (form == Form::coeff) {
    automorphism_coeff_kernel<<<g.grid, g.block, 0, launch_stream()>>>(in, out, limb_constants(base), galois_elt, g.log_n);
  } else {
    automorphism_eval_kernel<<<g.grid, g.block, 0, launch_stream()>>>(in, out, galois_elt, g.log_n);
  }
  after_launch("automorphism");
}

// --- per-device instances -----------------------------------------------------

CudaBackend& backend(int index) {
  static std::mutex mutex;
  // Leaked on purpose (like the pools): static objects may still use them.
  static std::array<CudaBackend*, kMaxDevices> backends{};
  if (index < 0 || index >= kMaxDevices) throw_no_device("device", index);
  std::lock_guard<std::mutex> lock(mutex);
  // Core code looks the backend up per operation: after the first call this
  // is a lock and a load, with no CUDA runtime query.
  if (backends[index] == nullptr) {
    if (index >= cuda_device_count()) throw_no_device("device", index);
    backends[index] = new CudaBackend(index);
  }
  return *backends[index];
}

}  // namespace cuda

// "cuda:N": the backend and pool of GPU N (raising NotSupported while no GPU
// is visible), and the copies above.
BackendRegistration cuda_registration() {
  return {"cuda", [](int index) -> Backend& { return cuda::backend(index); },
          [](int index) -> MemoryPool& { return cuda::device_pool(index); }, &cuda::cuda_copy};
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
    cuda::mul_mod_kernel<<<blocks, threads>>>(da, db, dout, n, mod);
    ok = cudaGetLastError() == cudaSuccess && cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  return ok;
}

}  // namespace ringfire
