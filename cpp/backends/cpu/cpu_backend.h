// The CPU backend: the reference implementation of every Backend kernel and
// the bit-exact oracle for the other backends. Loops run across
// (polynomial, limb) pairs on the library's thread pool (base/parallel.h).
#pragma once

#include "ringfire/ring/backend.h"

namespace ringfire::cpu {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }

  void ntt_forward(u64* data, std::size_t batch, const RnsBase& base) override;
  void ntt_inverse(u64* data, std::size_t batch, const RnsBase& base) override;

  void add(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void sub(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void negate(const u64* a, u64* out, std::size_t batch, const RnsBase& base) override;
  void multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base) override;
  void multiply_add(const u64* a, const u64* b, u64* acc, std::size_t batch, const RnsBase& base) override;
  void multiply_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch,
                       const RnsBase& base) override;

  void inner_product_pair(const u64* const* in, const u64* const* b, const u64* const* a, std::size_t terms,
                          u64* out0, u64* out1, const RnsBase& base) override;
  void linear_combination(const u64* const* inputs, const u64* weights, std::size_t terms, u64* out,
                          std::size_t batch, const RnsBase& base) override;
  void linear_combinations(const u64* const* inputs, const u64* weights, std::size_t terms, u64* const* outs,
                           std::size_t outputs, std::size_t batch, const RnsBase& base) override;
  void add_scalar(const u64* a, const u64* scalars, u64* out, std::size_t batch, const RnsBase& base) override;
  void copy(const u64* src, u64* dst, std::size_t words) override;
  void zero(u64* dst, std::size_t words) override;

  void poly_multiply(const u64* a, const u64* b, u64* out, std::size_t batch, const RnsBase& base,
                     PolyMulMethod method) override;

  void base_convert(const u64* in, u64* out, std::size_t batch, const BaseConverter& conv,
                    BaseConversion kind) override;
  void base_convert_ntt(const u64* in, u64* scratch, u64* const* out_limbs, const BaseConverter& conv,
                        BaseConversion kind) override;

  void automorphism(const u64* in, u64* out, std::size_t batch, const RnsBase& base, u64 galois_elt,
                    Form form) override;
};

// The process-wide CPU backend.
CpuBackend& cpu_backend();

}  // namespace ringfire::cpu
