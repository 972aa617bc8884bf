// Automorphisms (Galois maps) in coefficient and evaluation form: the
// kernels and CudaBackend::automorphism.
#include "cuda_backend.h"
#include "device.h"
#include "launch.h"

#include <cstddef>

#include "ringfire/arith/modular.h"

namespace ringfire::cuda {
namespace {

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

}  // namespace

// --- automorphisms ------------------------------------------------------------

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

}  // namespace ringfire::cuda
