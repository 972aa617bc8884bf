// The CUDA backend: every Backend kernel on one in-order CUDA stream per
// device, bit-identical to the CPU backend (the oracle). Data pointers are
// device pointers; the small per-limb parameter arrays the interface passes
// alongside them (multiply_scalar / add_scalar scalars, linear_combination
// weights and its array of input pointers) are host memory, as the callers
// in core pass them, and travel to the GPU as kernel parameters (no copies,
// no host synchronisation).
//
// Twiddle tables, moduli and base-conversion constants are uploaded once per
// device and cached (keyed by N and the moduli: NttTables are a pure function
// of (N, q), so equal keys mean equal bytes).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ringfire/base/memory_pool.h"
#include "ringfire/base/queue.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/kernel_bodies.h"
#include "runtime.h"

namespace ringfire::cuda {

// Raises DeviceError naming `op` and the CUDA error when `status` is not
// cudaSuccess (the checked wrapper every CUDA call goes through).
void check(cudaError_t status, const char* op);

// Asks for the largest shared-memory carveout for the NTT pass kernels on the
// current device (48 KiB per block; three resident blocks need 147 KiB of an
// SM's 228), where the default carveout may leave L1 the larger share.
void configure_ntt_kernels();

// Caching pool of device memory (cudaMalloc/cudaFree behind MemoryPool's
// free lists; thread-safe through the base class). Blocks are allocated on
// the pool's device. A released block is reused without synchronising only
// on the stream that released it (in order: work that used the block runs
// before work that reuses it); synchronize() or the end of a compute frame
// makes it reusable on every stream.
class CudaPool final : public MemoryPool {
 public:
  explicit CudaPool(int device) : device_(device) {}
  int device() const { return device_; }

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_free(void* block, std::size_t capacity) override;
  bool reuse_per_queue() const override { return true; }

 private:
  int device_;
};

// The pool of device `index` (created on first use).
CudaPool& device_pool(int index);

// Which NTT kernels ntt_forward / ntt_inverse / poly_multiply use.
enum class NttKernel {
  radix2,   // baseline: one global-memory kernel per stage (log2 N reads+writes)
  generic,  // stages fused in shared memory, every pass shape read at run time
  shared,   // the same passes, full tiles compiled per shape (default)
};

// Per-limb constants the kernels read, one entry per limb of a base.
struct LimbConstants {
  const ulonglong2* forward;  // (psi^br(i), Shoup constant), i < N
  const ulonglong2* inverse;  // (psi^-br(i), Shoup constant)
  Modulus modulus;
  ShoupOperand n_inv, last_n_inv;
};

// Device constants of a base conversion.
struct ConverterConstants {
  const Modulus* from = nullptr;           // q_i
  const ShoupOperand* qhat_inv = nullptr;  // (Q/q_i)^-1 mod q_i
  const double* reciprocal = nullptr;      // 1 / q_i
  const u64* qhat_words = nullptr;         // Q/q_i as src words each
  const u64* q_words = nullptr;            // Q (src words)
  const Modulus* to = nullptr;             // p_j
  const u64* qhat_mod_p = nullptr;         // [j * src + i]
  const ShoupOperand* qhat_mod_p_shoup = nullptr;
  const u64* q_mod_p = nullptr;            // Q mod p_j
  const ShoupOperand* neg_q_mod_p = nullptr;  // -Q mod p_j with its Shoup constant
};

// Where a transform's last pass writes instead of its dst (shared-memory
// kernels only): polynomial p's limb l at row l of `out + p * (limbs + gap_len)
// * N`, plus gap_len from l = gap_at + p * gap_step on (key switching's ModUp,
// whose converted limbs surround digit p's own). `constants`: per-polynomial
// limb constants (polynomial p's at p * limbs), else the base's.
struct GappedOutput {
  u64* out = nullptr;
  unsigned gap_at = 0, gap_step = 0, gap_len = 0;
  const LimbConstants* constants = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;
  std::string name() const override;

  int device() const { return device_; }
  // The calling thread's stream: its current queue (base/queue.h) when one
  // is set, else the device's default stream.
  cudaStream_t stream() const;
  // Blocks the host until every operation issued to this device (any
  // stream) has finished; cached memory becomes reusable on every stream.
  void synchronize() override;
  // Streams for concurrent computations (use them through QueueScope).
  QueueHandle create_stream();
  void destroy_stream(QueueHandle queue);
  // Per-kernel timing with CUDA events (seed 000 §III-I): every launch from
  // start_profiling() on is bracketed by two events; stop_profiling()
  // synchronises and returns one record per launch.
  void start_profiling();
  std::vector<KernelRecord> stop_profiling();
  // Debug mode (also RINGFIRE_CUDA_SYNC=1): synchronise after every kernel.
  void set_sync_each_kernel(bool on) { sync_each_kernel_ = on; }
  // Selects the NTT kernels (the baseline is kept to measure the speedup).
  void set_ntt_kernel(NttKernel kernel) { ntt_kernel_ = kernel; }
  // Whether mod_up_digits batches the digits (not under RINGFIRE_CUDA_MODUP=digits).
  void set_batch_mod_up(bool on) { batch_mod_up_ = on; }
  bool batch_mod_up() const { return batch_mod_up_; }
  NttKernel ntt_kernel() const { return ntt_kernel_; }
  // Whether a batch's transforms run limb-major (RINGFIRE_CUDA_NTT_ORDER=poly
  // for polynomial-major, the order before 2026-12-04).
  void set_ntt_limb_major(bool on) { ntt_limb_major_ = on; }
  bool ntt_limb_major() const { return ntt_limb_major_; }

  void ntt_forward(u64* data, std::size_t batch, const RnsBase& base) override;
  void ntt_inverse(u64* data, std::size_t batch, const RnsBase& base) override;
  void ntt_inverse_into(const u64* src, u64* dst, std::size_t batch, const RnsBase& base) override;

  void add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) override;
  void multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) override;
  void tensor(const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* d0, u64* d1, u64* d2,
              const RnsBase& base) override;
  void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                          u64* out0, u64* out1, const RnsBase& base) override;
  void linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                          std::size_t batch, const RnsBase& base) override;
  void multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                       const RnsBase& base) override;
  void add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) override;
  void copy(const u64* src, u64* dst, std::size_t words) override;
  void copy_blocks(const u64* src, std::size_t src_step, u64* dst, std::size_t dst_step, std::size_t words,
                   std::size_t count) override;
  void zero(u64* dst, std::size_t words) override;
  void poly_multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base,
                     PolyMulMethod method) override;
  void base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                    BaseConversion kind) override;
  // Converted and transformed in scratch, then scattered in one launch.
  void base_convert_ntt(const u64* in, u64* scratch, u64* const* out_limbs, const BaseConverter& conv,
                        BaseConversion kind) override;
  // All digits converted in one launch and transformed in one more, the NTT's
  // last pass writing each digit's limbs around its own.
  void mod_up_digits(const u64* c_coeff, const BaseConverter* const* convs, std::size_t count, std::size_t alpha,
                     u64* extended, std::size_t digit_words, u64* scratch, BaseConversion kind) override;
  void automorphism(const u64* in, u64* out, std::size_t batch, const RnsBase& base, u64 galois_elt,
                    Form form) override;

 private:
  // Forward / inverse transform from src to dst (may be equal); for the
  // inverse, src2 != nullptr multiplies src by src2 element-wise on load
  // (the Hadamard product fused into the first pass). With `gapped.out`, the
  // last pass writes there and dst only holds the passes before it.
  void transform(const u64* src, const u64* src2, u64* dst, std::size_t batch, const RnsBase& base, bool forward,
                 const GappedOutput& gapped = {});
  const LimbConstants* limb_constants(const RnsBase& base);
  // The limb constants of several bases one after another (one device array).
  const LimbConstants* stacked_limb_constants(const RnsBase* const* bases, std::size_t count);
  LimbConstants limb_entry(const NttTables& t);
  const ConverterConstants& converter_constants(const BaseConverter& conv);
  // The stream to launch on next; when profiling, records the launch's start event.
  cudaStream_t launch_stream();
  void after_launch(const char* kernel);
  cudaEvent_t take_event();

  int device_;
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  bool sync_each_kernel_ = false;  // RINGFIRE_CUDA_SYNC=1: debug mode
  // RINGFIRE_CUDA_BASE_CONVERT=split: the three-pass base conversion everywhere
  // (for a side-by-side measurement of the fused kernel on the same device).
  bool fused_base_convert_ = true;
  // RINGFIRE_CUDA_SCATTER=separate: ModUp's converted limbs go through a
  // scatter kernel instead of the NTT's last pass writing them in place.
  bool scatter_in_ntt_ = true;
  // ModUp converts all digits in one launch and transforms them in one more
  // (mod_up_digits); RINGFIRE_CUDA_MODUP=digits takes them one by one, for
  // measuring. The default since it ran bit-identical on an H200 (2026-12-04).
  bool batch_mod_up_ = true;
  NttKernel ntt_kernel_ = NttKernel::shared;
  bool ntt_limb_major_ = true;

  struct PendingRecord {
    const char* kernel;
    std::string op;
    cudaEvent_t start, stop;
  };
  std::atomic<bool> profiling_{false};
  std::mutex profile_mutex_;
  cudaEvent_t pending_start_ = nullptr;
  std::vector<PendingRecord> records_;
  std::vector<cudaEvent_t> spare_events_;

  std::mutex cache_mutex_;
  // Device allocations of the caches live as long as the backend (process).
  std::map<std::pair<std::size_t, u64>, std::pair<ulonglong2*, ulonglong2*>> tables_;
  std::map<std::vector<u64>, LimbConstants*> bases_;
  std::map<std::vector<u64>, std::unique_ptr<ConverterConstants>> converters_;
  std::vector<void*> owned_;
};

// The backend of CUDA device `index`; NotSupported without a usable GPU.
CudaBackend& backend(int index);

}  // namespace ringfire::cuda
