// Device-side timing of the CUDA kernels for `ringfire bench --device cuda`
// and benchmarks/gpu: CUDA events around back-to-back launches on the
// backend's stream, rotating over enough buffers that a batch does not stay
// resident in L2. Plain C++ header; builds without CUDA link
// bench_unavailable.cpp, which raises NotSupported.
#pragma once

#include <cstddef>
#include <string>

namespace ringfire::cuda {

struct KernelTiming {
  double median_seconds = 0;  // per call, median over the timed rounds
  double min_seconds = 0;     // per call, fastest round
  std::size_t buffers = 0;    // distinct input buffers rotated over
};

// Times one call of `op` on `limbs` limbs of `bits`-bit NTT primes, N = n, on
// device `device`. op: "ntt_forward", "ntt_inverse" or "poly_multiply";
// kernel: "shared" (default kernels), "shared_poly" (the same, a batch
// polynomial-major), "generic" (pass shapes read at run time) or "radix2"
// (the baseline). `batch` polynomials of `limbs` limbs a call. Each round
// times `calls` back-to-back calls between two events; `rounds` rounds.
KernelTiming time_kernel(const std::string& op, std::size_t n, std::size_t limbs, int bits,
                         const std::string& kernel, int rounds, int calls, int device, std::size_t batch = 1);

}  // namespace ringfire::cuda
