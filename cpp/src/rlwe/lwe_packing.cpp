#include "ringfire/rlwe/lwe_packing.h"

#include <string>
#include <utility>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/reduction.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/op_label.h"
#include "ringfire/ring/backend.h"

namespace ringfire {

namespace {

constexpr const char* kEmbedOp = "rlwe.embed_lwe";
constexpr const char* kMonomialOp = "rlwe.multiply_by_monomial";

// round(w Q_l / Q) mod q for one prime q of Q_l, then divided by the divisor:
// with r = (Q_l mod Q) w mod Q, w Q_l = Q u + r and u = -r Q^-1 mod q (q divides
// Q_l); the rounding adds 1 where r >= Q / 2.
struct Lift {
  Modulus q;
  u64 q_inverse;        // Q^-1 mod q
  u64 divisor_inverse;  // divisor^-1 mod q

  u64 operator()(u64 r, bool up) const {
    u64 u = mul_mod(neg_mod(r % q.value(), q.value()), q_inverse, q);
    if (up) u = add_mod(u, 1, q.value());
    return mul_mod(u, divisor_inverse, q);
  }
};

// embed_lwe for words of either width: `modulus` Q is an odd modulus below 2^32 for 32-bit
// words, 2^64 (given as 0) for 64-bit ones, where the products wrap as Q's arithmetic does.
template <class Word>
std::vector<Ciphertext> embed_words(const Word* words, std::size_t count, std::size_t n, std::uint64_t modulus,
                                    const RlweContextPtr& target, std::size_t level, const Metadata& metadata,
                                    std::uint64_t divisor, double noise_bits) {
  const OpLabel label(kEmbedOp);
  constexpr bool torus = sizeof(Word) == 8;
  require(target != nullptr, kEmbedOp, "no target context");
  const std::size_t N = target->n();
  require(n >= 2 && n <= N && (n & (n - 1)) == 0, kEmbedOp,
          "the LWE dimension " + std::to_string(n) + " must be a power of two up to the ring degree " +
              std::to_string(N));
  if constexpr (torus) {
    require(modulus == 0, kEmbedOp, "64-bit words are read mod 2^64 (modulus 0)");
  } else {
    require(modulus >= 3 && modulus < (u64{1} << 32) && (modulus & 1), kEmbedOp,
            "the LWE modulus must be odd and below 2^32, got " + std::to_string(modulus));
  }
  require(level <= target->max_level(), kEmbedOp,
          "level " + std::to_string(level) + " is above the context's top, " + std::to_string(target->max_level()));
  // r = (Q_l mod Q) w mod Q: below 2^64 for 32-bit words; for 64-bit ones the wrapping product.
  auto reduce = [&](u64 x) { return torus ? x : x % modulus; };
  auto half_up = [&](u64 r) { return torus ? r >= (u64{1} << 63) : 2 * r >= modulus; };
  const RnsBase& base = *target->level_base(level);
  const std::size_t limbs = base.size(), k = N / n;
  u64 q_level_mod = 1;  // Q_l mod Q
  std::vector<Lift> lifts;
  for (std::size_t i = 0; i < limbs; ++i) {
    const Modulus& q = base.modulus(i);
    // Q mod q: 2^64 mod q for the torus.
    const u64 q_mod = torus ? static_cast<u64>((static_cast<unsigned __int128>(1) << 64) % q.value())
                            : modulus % q.value();
    u64 q_inverse = 0, divisor_inverse = 0;
    require(try_inv_mod(q_mod, q.value(), q_inverse), kEmbedOp,
            "the LWE modulus " + (torus ? std::string("2^64") : std::to_string(modulus)) +
                " shares a factor with the prime " + std::to_string(q.value()));
    require(try_inv_mod(divisor % q.value(), q.value(), divisor_inverse), kEmbedOp,
            "the divisor " + std::to_string(divisor) + " is not invertible mod " + std::to_string(q.value()));
    lifts.push_back({q, q_inverse, divisor_inverse});
    q_level_mod = reduce(q_level_mod * (torus ? q.value() : q.value() % modulus));
  }
  if constexpr (!torus)
    for (std::size_t w = 0; w < count * (n + 1); ++w)
      require(words[w] < modulus, kEmbedOp, [&] { return "an LWE word is not below the modulus " + std::to_string(modulus); });

  Metadata meta = metadata;
  meta.form = Form::eval;  // written in coefficient form, transformed in place below
  std::vector<Ciphertext> out;
  out.reserve(count);
  Backend& cpu = backend_for(Device::cpu());
  for (std::size_t c = 0; c < count; ++c) {
    const Word* a = words + c * (n + 1);
    Ciphertext ct(target, 2, level, meta, Device::cpu());  // zeros between the spread words
    u64* c0 = ct.data();
    u64* c1 = ct.data() + ct.poly_words();
    // c_1 = -A: -a_0 at X^0 and a_{n-j} at X^j, each at X^(j k) in R_N.
    for (std::size_t j = 0; j < n; ++j) {
      const u64 word = j == 0 ? (torus ? 0 - u64{a[0]} : (modulus - a[0]) % modulus) : u64{a[n - j]};
      const u64 r = reduce(q_level_mod * word);
      const bool up = half_up(r);
      for (std::size_t i = 0; i < limbs; ++i) c1[i * N + j * k] = lifts[i](r, up);
    }
    const u64 r = reduce(q_level_mod * u64{a[n]});
    for (std::size_t i = 0; i < limbs; ++i) c0[i * N] = lifts[i](r, half_up(r));
    cpu.ntt_forward(ct.data(), 2, base);
    ct.set_noise_bits(noise_bits);
    out.push_back(std::move(ct));
  }
  return out;
}

}  // namespace

std::vector<Ciphertext> embed_lwe(const std::uint32_t* words, std::size_t count, std::size_t n,
                                  std::uint64_t modulus, const RlweContextPtr& target, std::size_t level,
                                  const Metadata& metadata, std::uint64_t divisor, double noise_bits) {
  return embed_words(words, count, n, modulus, target, level, metadata, divisor, noise_bits);
}

std::vector<Ciphertext> embed_torus_lwe(const std::uint64_t* words, std::size_t count, std::size_t n,
                                        const RlweContextPtr& target, std::size_t level, const Metadata& metadata,
                                        std::uint64_t divisor, double noise_bits) {
  return embed_words(words, count, n, 0, target, level, metadata, divisor, noise_bits);
}

Ciphertext multiply_by_monomial(const Ciphertext& a, std::size_t power) {
  const OpLabel label(kMonomialOp);
  require(a.device().is_host(), kMonomialOp,
          "the ciphertext lives on '" + a.device().str() + "': copy it to the host first");
  require(a.form() == Form::eval, kMonomialOp, "expected a ciphertext in evaluation form");
  const std::size_t N = a.n();
  require(power < 2 * N, kMonomialOp,
          "the power " + std::to_string(power) + " must lie below 2N = " + std::to_string(2 * N));
  const RnsBase& base = a.base();
  Backend& cpu = backend_for(Device::cpu());
  std::vector<u64> coefficients(a.data(), a.data() + a.size() * a.poly_words());
  cpu.ntt_inverse(coefficients.data(), a.size(), base);
  Ciphertext out(a.context(), a.size(), a.level(), a.metadata(), Device::cpu(), kUninitialized);
  const std::size_t shift = power % N;
  const bool negate_all = power >= N;  // X^N = -1
  for (std::size_t p = 0; p < a.size(); ++p)
    for (std::size_t i = 0; i <= a.level(); ++i) {
      const u64 q = base.modulus(i).value();
      const u64* from = coefficients.data() + p * a.poly_words() + i * N;
      u64* to = out.data() + p * a.poly_words() + i * N;
      for (std::size_t j = 0; j < N; ++j) {
        const bool wraps = j + shift >= N;
        to[(j + shift) % N] = wraps != negate_all ? neg_mod(from[j], q) : from[j];
      }
    }
  cpu.ntt_forward(out.data(), out.size(), base);
  out.set_noise_bits(a.noise_bits());
  return out;
}

}  // namespace ringfire
