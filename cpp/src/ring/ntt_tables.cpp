#include "ringfire/ring/ntt_tables.h"

#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"

namespace ringfire {

namespace {
constexpr std::size_t kMaxPolyDegree = std::size_t{1} << 17;
}

NttTables::NttTables(std::size_t poly_degree, const Modulus& modulus)
    : n_(poly_degree), log_n_(0), modulus_(modulus) {
  require(poly_degree >= 4 && poly_degree <= kMaxPolyDegree && (poly_degree & (poly_degree - 1)) == 0,
          "ring.ntt", "poly_degree must be a power of two in [4, 2^17], got " + std::to_string(poly_degree));
  while ((std::size_t{1} << log_n_) < n_) ++log_n_;
  const u64 q = modulus.value();
  require(is_ntt_friendly(q, n_), "ring.ntt",
          "modulus " + std::to_string(q) + " is not an NTT-friendly prime for N=" + std::to_string(n_) +
              " (need a prime q < 2^61 with q = 1 mod 2N)");
  psi_ = minimal_primitive_root(q, n_);
  const u64 psi_inv = inv_mod(psi_, q);

  forward_.resize(n_);
  inverse_.resize(n_);
  u64 power = 1, power_inv = 1;
  for (std::size_t i = 0; i < n_; ++i) {
    const std::size_t slot = reverse_bits(i, log_n_);
    forward_[slot] = power;
    inverse_[slot] = power_inv;
    power = mul_mod(power, psi_, modulus_);
    power_inv = mul_mod(power_inv, psi_inv, modulus_);
  }
  forward_shoup_.resize(n_);
  inverse_shoup_.resize(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    forward_shoup_[i] = shoup_precompute(forward_[i], q);
    inverse_shoup_[i] = shoup_precompute(inverse_[i], q);
  }

  const std::size_t half = n_ / 2;
  last_squares_.resize(half);
  last_squares_shoup_.resize(half);
  for (std::size_t i = 0; i < half; ++i) {
    const u64 w = forward_[half + i];
    last_squares_[i] = mul_mod(w, w, modulus_);
    last_squares_shoup_[i] = shoup_precompute(last_squares_[i], q);
  }

  const u64 n_inv = inv_mod(static_cast<u64>(n_ % q), q);
  const u64 half_inv = inv_mod(static_cast<u64>(half % q), q);
  n_inv_ = make_shoup(n_inv, q);
  last_n_inv_ = make_shoup(mul_mod(inverse_[1], n_inv, modulus_), q);
  half_n_inv_ = make_shoup(half_inv, q);
  last_half_n_inv_ = make_shoup(mul_mod(inverse_[1], half_inv, modulus_), q);
}

}  // namespace ringfire
