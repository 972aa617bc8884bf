#include "ringfire/bgv/decryptor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>

#include "ringfire/arith/modular.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/base/parallel.h"
#include "ringfire/ring/multiword.h"
#include "ringfire/rlwe/encryptor.h"
#include "ringfire/rlwe/prng.h"

namespace ringfire::bgv {

namespace {

const char* op_of(const Context& ctx) { return ctx.scheme() == Scheme::bfv ? "bfv.decrypt" : "bgv.decrypt"; }

// c(s) over q_0..q_level in coefficient form (host memory, wiped on destruction).
class Decrypted {
 public:
  Decrypted(const SecretKey& key, const Ciphertext& cipher) : words_(cipher.poly_words()) {
    decrypt_core(key, cipher, words_.data());
  }
  ~Decrypted() { secure_zero(words_.data(), words_.size() * sizeof(u64)); }
  const u64* data() const { return words_.data(); }

 private:
  std::vector<u64> words_;
};

void check_inputs(const Context& ctx, const SecretKey& key, const Ciphertext& cipher, const char* op) {
  require(key.fingerprint() == ctx.fingerprint(), op, "the secret key was made under different parameters");
  require(cipher.fingerprint() == ctx.fingerprint(), op, "the ciphertext was made under different parameters");
  u64 inverse = 0;
  require(try_inv_mod(cipher.metadata().correction, ctx.plain_modulus().value(), inverse), op,
          "the correction factor " + std::to_string(cipher.metadata().correction) + " is not invertible mod t");
}

double log2_modulus(const RnsBase& base) {
  double bits = 0.0;
  for (const Modulus& m : base.moduli()) bits += std::log2(static_cast<double>(m.value()));
  return bits;
}

std::string bits_text(double bits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", bits);
  return text;
}

}  // namespace

Decryption decrypt(const Context& ctx, const SecretKey& key, const Ciphertext& cipher) {
  const char* op = op_of(ctx);
  const OpLabel label(op);
  check_inputs(ctx, key, cipher, op);
  const Decrypted x(key, cipher);
  const RnsBase& base = cipher.base();
  const std::size_t limbs = base.size(), n = ctx.n();
  const Modulus& t = ctx.plain_modulus();
  // z = [t x]_Q = sum_i y_i (Q / q_i) - k Q with y_i = [t x (Q/q_i)^-1]_{q_i} and
  // k = round(sum_i y_i / q_i); z / Q = the fractional part left by k.
  std::vector<u64> w(limbs), qhat_mod_t(limbs);
  std::vector<double> inv_q(limbs);
  for (std::size_t i = 0; i < limbs; ++i) {
    const Modulus& q = base.modulus(i);
    w[i] = mul_mod(ctx.t_mod_q()[i], base.qhat_inverse(i), q);
    qhat_mod_t[i] = multiword::mod_modulus(base.qhat(i), limbs, t);
    inv_q[i] = 1.0 / static_cast<double>(q.value());
  }
  const u64 q_mod_t = multiword::mod_modulus(base.product().data(), limbs, t);
  const u64 undo = inv_mod(cipher.metadata().correction, t.value());
  Decryption out;
  out.coefficients.assign(n, 0);
  std::mutex mutex;
  double largest = 0.0;  // max |z| / Q
  auto body = [&](std::size_t begin, std::size_t end) {
    double local = 0.0;
    for (std::size_t j = begin; j < end; ++j) {
      double v = 0.0;
      u64 z = 0;
      for (std::size_t i = 0; i < limbs; ++i) {
        const u64 y = mul_mod(x.data()[i * n + j], w[i], base.modulus(i));
        v += static_cast<double>(y) * inv_q[i];
        z = mad_mod(y % t.value(), qhat_mod_t[i], z, t);
      }
      const double k = std::nearbyint(v);
      local = std::max(local, std::fabs(v - k));
      z = sub_mod(z, mul_mod(static_cast<u64>(k) % t.value(), q_mod_t, t), t.value());
      out.coefficients[j] = mul_mod(z, undo, t);
    }
    const std::lock_guard<std::mutex> lock(mutex);
    largest = std::max(largest, local);
  };
  parallel_ranges(n, static_cast<std::size_t>(num_threads()), body);
  const double q_bits = log2_modulus(base);
  // Below 2^-50 the double-precision fraction is rounding error: the budget is at least that.
  out.noise_budget_bits = std::min(q_bits - 1.0, -std::log2(2.0 * std::max(largest, 0x1p-50)));
  require(largest <= 0.25, op,
          "the noise has overflowed: " + bits_text(out.noise_budget_bits) +
              " bits of noise budget left (decryption needs at least 1); the result would be wrong. Use larger "
              "or more ciphertext primes, a smaller plaintext modulus, or fewer operations before decrypting");
  return out;
}

double noise_budget(const Context& ctx, const SecretKey& key, const Ciphertext& cipher) {
  const char* op = ctx.scheme() == Scheme::bfv ? "bfv.noise_budget" : "bgv.noise_budget";
  const OpLabel label(op);
  check_inputs(ctx, key, cipher, op);
  const Decrypted x(key, cipher);
  const RnsBase& base = cipher.base();
  const std::size_t limbs = base.size(), n = ctx.n();
  std::vector<u64> residues(limbs * n);
  for (std::size_t i = 0; i < limbs; ++i)
    for (std::size_t j = 0; j < n; ++j)
      residues[i * n + j] = mul_mod(x.data()[i * n + j], ctx.t_mod_q()[i], base.modulus(i));
  std::vector<u64> words(n * limbs), half(limbs), magnitude(limbs);
  base.compose(residues.data(), n, words.data());
  // Q / 2, rounded down, to centre each value.
  const std::vector<u64>& q = base.product();
  for (std::size_t w = 0; w < limbs; ++w) half[w] = (q[w] >> 1) | (w + 1 < limbs ? q[w + 1] << 63 : 0);
  double largest = -1.0;  // log2 of max |z|
  for (std::size_t j = 0; j < n; ++j) {
    const u64* value = words.data() + j * limbs;
    std::copy(value, value + limbs, magnitude.begin());
    if (!multiword::greater_equal(half.data(), magnitude.data(), limbs)) {  // z > Q/2: |z| = Q - z
      std::vector<u64> negated(q);
      multiword::subtract(negated.data(), magnitude.data(), limbs);
      magnitude = negated;
    }
    std::size_t top = limbs;
    while (top > 0 && magnitude[top - 1] == 0) --top;
    if (top == 0) continue;
    long double v = static_cast<long double>(magnitude[top - 1]);
    if (top >= 2) v += static_cast<long double>(magnitude[top - 2]) / 18446744073709551616.0L;
    largest = std::max(largest, static_cast<double>(std::log2(v)) + 64.0 * static_cast<double>(top - 1));
  }
  secure_zero(residues.data(), residues.size() * sizeof(u64));
  secure_zero(words.data(), words.size() * sizeof(u64));
  const double q_bits = log2_modulus(base);
  return largest < 0.0 ? q_bits - 1.0 : q_bits - 1.0 - largest;
}

}  // namespace ringfire::bgv
