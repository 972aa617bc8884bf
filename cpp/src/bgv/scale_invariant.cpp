// The scale-invariant (BFV) product in RNS, after Halevi, Polyakov and Shoup,
// "An improved RNS variant of the BFV homomorphic encryption scheme" (CT-RSA
// 2019), in its "extend, tensor, divide" form:
//
//   1. lift both operands' centred coefficients exactly from Q_l to an
//      auxiliary base R (R > t N Q_l, Context::tensor_base);
//   2. the tensor product d = a (x) b over Q_l and over R (evaluation form);
//      as integers (centred lifts), |d| <= N Q_l^2 / 2;
//   3. y = round(t d / Q_l) = (t d - [t d]_{Q_l}) / Q_l, exactly: [t d]_{Q_l}
//      is the centred residue known from the Q_l limbs, lifted exactly to R,
//      and the division by Q_l is exact, so y mod r_j is
//      (t d_R - [t d]_{Q_l}) Q_l^-1 mod r_j;
//   4. |y| <= t N Q_l / 2 + 1 < R / 2, so y's exact conversion back to Q_l
//      gives y itself.
// Every step is a Backend kernel, so it runs on any device, bit-identical.
#include "ringfire/bgv/noise.h"
#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/bgv/evaluator.h"
#include "tensor.h"

namespace ringfire::bgv {

Ciphertext Evaluator::scale_invariant_tensor(const Ciphertext& a, const Ciphertext& b, const char* op) const {
  check_pair(a, b, op, false);
  require(a.size() == 2 && b.size() == 2, op,
          "needs size-2 ciphertexts (relinearize first), got sizes " + std::to_string(a.size()) + " and " +
              std::to_string(b.size()));
  const std::size_t level = a.level(), n = a.n();
  const TensorBase& tb = context_->tensor_base(level);
  const RnsBase& q = a.base();
  const RnsBase& r = *tb.aux;
  const std::size_t q_words = q.size() * n, r_words = r.size() * n;
  const Device& device = a.device();
  Backend& be = backend_for(device);
  const bool square = &a == &b;
  const std::size_t inputs = square ? 2 : 4;

  // 1. The operands over R.
  Buffer coeffs(inputs * q_words, device), over_r(inputs * r_words, device);
  be.copy(a.data(), coeffs.data(), 2 * q_words);
  if (!square) be.copy(b.data(), coeffs.data() + 2 * q_words, 2 * q_words);
  be.ntt_inverse(coeffs.data(), inputs, q);
  be.base_convert(coeffs.data(), over_r.data(), inputs, *tb.q_to_aux, BaseConversion::exact);
  be.ntt_forward(over_r.data(), inputs, r);

  // 2. The tensor over Q_l (in the result's storage) and over R.
  const Modulus& t = context_->plain_modulus();
  Metadata meta = a.metadata();
  meta.correction = mul_mod(mul_mod(a.metadata().correction, b.metadata().correction, t),
                            context_->tensor_factor(level), t);
  Ciphertext out(a.context(), 3, level, meta, device, kUninitialized);
  tensor_polys(be, a.poly(0), a.poly(1), b.poly(0), b.poly(1), out.data(), square, q);
  Buffer d_r(3 * r_words, device);
  const u64* a_r = over_r.data();
  const u64* b_r = square ? a_r : a_r + 2 * r_words;
  tensor_polys(be, a_r, a_r + r_words, b_r, b_r + r_words, d_r.data(), square, r);
  be.ntt_inverse(out.data(), 3, q);
  be.ntt_inverse(d_r.data(), 3, r);

  // 3. y = (t d_R - lift([t d]_Q)) Q^-1 over R.
  be.multiply_scalar(out.data(), context_->t_mod_q().data(), out.data(), 3, q);
  Buffer lifted(3 * r_words, device);
  be.base_convert(out.data(), lifted.data(), 3, *tb.q_to_aux, BaseConversion::exact);
  be.multiply_scalar(d_r.data(), tb.t_mod_aux.data(), d_r.data(), 3, r);
  be.sub(d_r.data(), lifted.data(), d_r.data(), 3, r);
  be.multiply_scalar(d_r.data(), tb.q_inverse_mod_aux.data(), d_r.data(), 3, r);

  // 4. Back to Q_l, evaluation form.
  be.base_convert(d_r.data(), out.data(), 3, *tb.aux_to_q, BaseConversion::exact);
  be.ntt_forward(out.data(), 3, q);
  return out;
}

}  // namespace ringfire::bgv
