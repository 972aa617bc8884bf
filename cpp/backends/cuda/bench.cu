// GPU kernel timing (see bench.h). Host code: allocations, uploads and the
// event pairs; the kernels are the backend's own.
#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench.h"
#include "cuda_backend.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "backends/cuda/cuda_info.h"

namespace ringfire::cuda {

namespace {

constexpr const char* kOp = "cuda.bench";
// Rotating over at least this many bytes keeps repeated calls from reading
// the previous call's output out of L2 (50 MB on an H100).
constexpr std::size_t kRotationBytes = std::size_t{256} << 20;

class Event {
 public:
  Event() { check(cudaEventCreate(&event_), kOp); }
  ~Event() { (void)cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

KernelTiming time_kernel(const std::string& op, std::size_t n, std::size_t limbs, int bits,
                         const std::string& kernel, int rounds, int calls, int device, std::size_t batch) {
  require(op == "ntt_forward" || op == "ntt_inverse" || op == "poly_multiply", kOp,
          "op must be ntt_forward, ntt_inverse or poly_multiply, got '" + op + "'");
  require(kernel == "shared" || kernel == "shared_poly" || kernel == "generic" || kernel == "radix2", kOp,
          "kernel must be 'shared', 'shared_poly', 'generic' or 'radix2', got '" + kernel + "'");
  require(n >= 16 && n <= (std::size_t{1} << 17) && (n & (n - 1)) == 0, kOp,
          "n must be a power of two in [16, 2^17], got " + std::to_string(n));
  require(limbs >= 1 && limbs <= 256, kOp, "limbs must be in [1, 256]");
  require(rounds >= 1 && calls >= 1, kOp, "rounds and calls must be >= 1");
  require(batch >= 1 && batch <= 16, kOp, "batch must be in [1, 16]");
  CudaBackend& gpu = backend(device);
  check(cudaSetDevice(device), kOp);
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, limbs, n));
  const std::size_t words = batch * limbs * n, bytes = words * sizeof(u64);
  // Small batches (latency) may stay in L2, as they would in a real pipeline.
  const std::size_t buffers = std::clamp<std::size_t>((kRotationBytes + bytes - 1) / bytes, 2, 64);
  const std::size_t operands = op == "poly_multiply" ? 3 : 1;

  // Random reduced inputs (transforms keep them reduced, so reruns stay valid).
  std::vector<u64> host(words);
  std::mt19937_64 rng(12345);
  for (std::size_t row = 0; row < batch * limbs; ++row) {
    std::uniform_int_distribution<u64> dist(0, base->modulus(row % limbs).value() - 1);
    for (std::size_t j = 0; j < n; ++j) host[row * n + j] = dist(rng);
  }
  std::vector<u64*> data(buffers * operands, nullptr);
  struct Free {
    std::vector<u64*>& d;
    ~Free() {
      for (u64* p : d) (void)cudaFree(p);
    }
  } free_all{data};
  for (u64*& p : data) {
    check(cudaMalloc(&p, bytes), kOp);
    check(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), kOp);
  }

  // shared_poly: the default kernels, a batch's polynomials one after
  // another instead of limb-major.
  const NttKernel previous = gpu.ntt_kernel();
  const bool previous_order = gpu.ntt_limb_major();
  gpu.set_ntt_kernel(kernel == "radix2"    ? NttKernel::radix2
                     : kernel == "generic" ? NttKernel::generic
                                           : NttKernel::shared);
  if (kernel == "shared_poly") gpu.set_ntt_limb_major(false);
  struct Restore {
    CudaBackend& gpu;
    NttKernel kernel;
    bool limb_major;
    ~Restore() {
      gpu.set_ntt_kernel(kernel);
      gpu.set_ntt_limb_major(limb_major);
    }
  } restore{gpu, previous, previous_order};
  std::size_t next = 0;
  auto launch = [&] {
    u64** set = data.data() + (next++ % buffers) * operands;
    if (op == "ntt_forward") gpu.ntt_forward(set[0], batch, *base);
    else if (op == "ntt_inverse") gpu.ntt_inverse(set[0], batch, *base);
    else gpu.poly_multiply(set[0], set[1], set[2], batch, *base, PolyMulMethod::ntt);
  };
  // Warm-up: module load, table upload, clocks.
  for (std::size_t i = 0; i < buffers; ++i) launch();
  gpu.synchronize();

  Event start, stop;
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    check(cudaEventRecord(start.get(), gpu.stream()), kOp);
    for (int c = 0; c < calls; ++c) launch();
    check(cudaEventRecord(stop.get(), gpu.stream()), kOp);
    check(cudaEventSynchronize(stop.get()), kOp);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.get(), stop.get()), kOp);
    per_call.push_back(ms * 1e-3 / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call[per_call.size() / 2], per_call.front(), buffers};
}

}  // namespace ringfire::cuda
