// RNS base conversion from base B = {q_i} to base C = {p_j} (same N).
//
// fast:  out_j = sum_i [x_i * (Q/q_i)^-1]_{q_i} * (Q/q_i) mod p_j, which is
//        x + u*Q for some 0 <= u < |B| (the approximate "FastBConv").
// exact: subtracts v*Q with v = round(sum_i y_i / q_i), giving the centered
//        representative of x in (-Q/2, Q/2] modulo each p_j
//        (Halevi-Polyakov-Shoup). v is computed in double precision; the rare
//        coefficients whose sum falls within 2^-36 of a half are settled with
//        multiword integers, so the result is exact for every input.
#pragma once

#include <vector>

#include "ringfire/ring/rns_base.h"

namespace ringfire {

enum class BaseConversion { fast, exact };

class BaseConverter {
 public:
  // Raises InvalidArgument when the bases differ in N.
  BaseConverter(RnsBasePtr from, RnsBasePtr to);

  const RnsBase& from() const { return *from_; }
  const RnsBase& to() const { return *to_; }
  const RnsBasePtr& from_ptr() const { return from_; }
  const RnsBasePtr& to_ptr() const { return to_; }
  // (Q/q_i) mod p_j at [j * |B| + i].
  const u64* qhat_mod_p() const { return qhat_mod_p_.data(); }
  // Q mod p_j.
  const u64* q_mod_p() const { return q_mod_p_.data(); }
  // 1 / q_i in double precision.
  const double* q_reciprocal() const { return q_reciprocal_.data(); }

 private:
  RnsBasePtr from_, to_;
  std::vector<u64> qhat_mod_p_;
  std::vector<u64> q_mod_p_;
  std::vector<double> q_reciprocal_;
};

}  // namespace ringfire
