// The Backend interface: the small set of polynomial kernels every device
// implements. Core code calls these through backend_for(device) and never
// names a device API. Arguments are raw word pointers on the backend's device,
// laid out as `batch` polynomials back to back, each limbs x N (limb-major),
// where limbs = base.size() and N = base.n(). Inputs are reduced (< q_i).
// Checking shapes, forms and devices is the caller's job (see poly_ops.h).
// Small parameter arrays passed next to the data pointers (scalars, weights,
// linear_combination's array of input pointers) are host memory.
// Asynchronous backends order work on the calling thread's current queue
// (base/queue.h) and return before it has run; synchronize() waits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ringfire/base/device.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire {

// Coefficient form, or evaluation (NTT, bit-reversed slot order) form.
enum class Form { coeff, eval };

// How poly_multiply forms the product in the NTT domain.
enum class PolyMulMethod {
  ntt,        // forward NTTs, Hadamard product, inverse NTT (seed 002 eq. 2)
  karatsuba,  // last forward stage, product and first inverse stage fused (Alg. 7/8)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Blocks the host until all work issued to the device has finished (the
  // CPU backend is synchronous: nothing to wait for).
  virtual void synchronize() {}

  // In-place negacyclic NTT: coefficient -> evaluation form, and back.
  virtual void ntt_forward(u64* data, std::size_t batch, const RnsBase& base) = 0;
  virtual void ntt_inverse(u64* data, std::size_t batch, const RnsBase& base) = 0;
  // dst = the inverse NTT of src, which is left alone (regions must not
  // overlap). This default copies, then transforms in place; a backend may
  // read src in its first pass instead (one pass over memory fewer).
  virtual void ntt_inverse_into(const u64* src, u64* dst, std::size_t batch, const RnsBase& base) {
    copy(src, dst, batch * base.size() * base.n());
    ntt_inverse(dst, batch, base);
  }

  // Element-wise, any form: out = a + b, a - b, -a, a * b (mod q_i).
  virtual void add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) = 0;
  virtual void sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) = 0;
  virtual void negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) = 0;
  virtual void multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) = 0;
  // acc = acc + a * b (mod q_i) with one reduction per element (mad_mod).
  virtual void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) = 0;
  // The tensor product of two size-2 ciphertexts, one polynomial each on `base`:
  // d0 = a0 b0, d1 = a0 b1 + a1 b0, d2 = a1 b1 (mod q_i), element-wise; a square
  // when a0 == b0 and a1 == b1 (then d1 = 2 a0 a1). Outputs must not alias the
  // inputs. This default makes the element-wise calls one by one; a backend may
  // read each input once for all three outputs (the GPU: one launch, not four).
  virtual void tensor(const u64* a0, const u64* a1, const u64* b0, const u64* b1, u64* d0, u64* d1, u64* d2,
                      const RnsBase& base) {
    if (a0 == b0 && a1 == b1) {
      multiply(a0, a0, d0, 1, base);
      multiply(a0, a1, d1, 1, base);
      add(d1, d1, d1, 1, base);
    } else {
      multiply(a0, b0, d0, 1, base);
      multiply(a0, b1, d1, 1, base);
      multiply_add(a1, b0, d1, 1, base);
    }
    multiply(a1, b1, d2, 1, base);
  }
  // Key-switching inner product over one polynomial on `base`: out0 =
  // sum_t in[t] * b[t], out1 = sum_t in[t] * a[t] (mod q_i), element-wise,
  // in one pass with one reduction per 32 terms (lazy 128-bit sums). in, b
  // and a are host arrays of `terms` pointers to device polynomials.
  virtual void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                                  u64* out0, u64* out1, const RnsBase& base) = 0;
  // out = sum_t weights[t * limbs + i] * inputs[t] on limb i, for `batch`
  // polynomials per input (each input a batch x limbs x N block); weights
  // are residues (< q_i); out is fully reduced.
  virtual void linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                                  std::size_t batch, const RnsBase& base) = 0;
  // A dense layer: outs[o] = sum_t weights[(o * terms + t) * limbs + i] * inputs[t] on limb
  // i, for `outputs` outputs over the same inputs; the same words as `outputs` calls of
  // linear_combination, which is what this default makes. A backend may override it to read
  // each input once for several outputs (the CPU's AVX-512 path: inputs that do not fit in
  // cache are otherwise streamed from memory once per output).
  virtual void linear_combinations(const u64* const* inputs, const u64* weights, std::size_t terms,
                                   u64* const* outs, std::size_t outputs, std::size_t batch, const RnsBase& base) {
    const std::size_t per_output = terms * base.size();
    for (std::size_t o = 0; o < outputs; ++o)
      linear_combination(inputs, weights + o * per_output, terms, outs[o], batch, base);
  }
  // out = a * scalars[i] on limb i (scalars[i] < q_i).
  virtual void multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                               const RnsBase& base) = 0;

  // out = a + scalars[i] on limb i (scalars[i] < q_i).
  virtual void add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) = 0;
  // dst = src, `words` words on this backend's device (regions must not overlap).
  virtual void copy(const u64* src, u64* dst, std::size_t words) = 0;
  // `count` blocks of `words` words: block i from src + i * src_step to
  // dst + i * dst_step (no overlaps). This default copies block by block; a
  // backend may move them all at once (the GPU: one strided copy).
  virtual void copy_blocks(const u64* src, std::size_t src_step, u64* dst, std::size_t dst_step, std::size_t words,
                           std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) copy(src + i * src_step, dst + i * dst_step, words);
  }
  // dst = 0, `words` words.
  virtual void zero(u64* dst, std::size_t words) = 0;

  // Negacyclic product of coefficient-form polynomials; out may alias a or b.
  virtual void poly_multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base,
                             PolyMulMethod method) = 0;

  // Coefficient-form base conversion; in has conv.from() limbs, out conv.to().
  virtual void base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                            BaseConversion kind) = 0;
  // One polynomial converted (as base_convert) and brought to evaluation
  // form over conv.to(), target limb j written at out_limbs[j] (a host array
  // of conv.to().size() pointers to N-word limbs on this backend's device,
  // which need not be contiguous): key switching's ModUp, which scatters the
  // converted limbs around the digit's own. `scratch` holds conv.to().size()
  // x N words on the device. The default converts into scratch, transforms
  // and copies; a backend may fuse the steps (the CPU transforms each limb
  // while it is still in cache, and leaves scratch alone).
  virtual void base_convert_ntt(const u64* in, u64* scratch, u64* const* out_limbs, const BaseConverter& conv,
                                BaseConversion kind) {
    base_convert(in, scratch, 1, conv, kind);
    ntt_forward(scratch, 1, conv.to());
    const std::size_t n = conv.to().n();
    for (std::size_t j = 0; j < conv.to().size(); ++j) copy(scratch + j * n, out_limbs[j], n);
  }
  // Key switching's ModUp of `count` digits of `alpha` limbs each: digit d,
  // limbs [d alpha, (d + 1) alpha) of c_coeff (coefficient form), converted by
  // *convs[d] (whose targets are the other limbs of the extended base, in
  // order) and brought to evaluation form at extended + d * digit_words,
  // target limb i at its row of the extended base; the rows of the digit's
  // own limbs are not written. `scratch` holds digit_words words. The default
  // runs base_convert_ntt digit by digit; a backend may do all digits at once.
  virtual void mod_up_digits(const u64* c_coeff, const BaseConverter* const* convs, std::size_t count,
                             std::size_t alpha, u64* extended, std::size_t digit_words, u64* scratch,
                             BaseConversion kind) {
    std::vector<u64*> targets;
    for (std::size_t d = 0; d < count; ++d) {
      const std::size_t n = convs[d]->to().n(), limbs = convs[d]->to().size() + alpha;
      targets.clear();
      for (std::size_t i = 0; i < limbs; ++i)
        if (i < d * alpha || i >= (d + 1) * alpha) targets.push_back(extended + d * digit_words + i * n);
      base_convert_ntt(c_coeff + d * alpha * n, scratch, targets.data(), *convs[d], kind);
    }
  }

  // out = a(X^galois_elt) for odd galois_elt in [1, 2N); out must not alias in.
  virtual void automorphism(const u64* in, u64* out, std::size_t batch, const RnsBase& base, u64 galois_elt,
                            Form form) = 0;
};

// A backend, as it registers: devices "name" / "name:N" run on factory(N),
// allocate from pool(N) and move data with copier (see base/device.h).
using BackendFactory = Backend& (*)(int index);
struct BackendRegistration {
  std::string name;
  BackendFactory factory = nullptr;
  PoolResolver pool = nullptr;
  DeviceCopier copier = nullptr;
};

// Registers a backend (or replaces the one of that name) and returns its
// device kind. The backends built in ("cpu", "cuda" — or its stand-in, which
// raises NotSupported, in builds without CUDA) register when the library
// loads (cpp/backends/registry.cpp); others may register at any time.
DeviceKind register_backend(const BackendRegistration& registration);

// The backend for a device; raises NotSupported when its kind has none.
// Provided by the backends target.
Backend& backend_for(const Device& device);

}  // namespace ringfire
