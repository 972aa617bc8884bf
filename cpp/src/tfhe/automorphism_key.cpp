#include "ringfire/tfhe/automorphism_key.h"

#include <algorithm>
#include <cstring>

#include "blind_rotation_kernels.h"
#include "key_generation.h"
#include "mod32.h"
#include "ringfire/base/errors.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::tfhe {

namespace {

constexpr std::uint32_t kGenerator = 5;  // generates the odd residues mod 2N with -1

}  // namespace

void odd_exponents(const u32* in, std::size_t n, u32 q, u32* out) {
  // A 64-bit hash of the ciphertext (multiply-xorshift over its words), then a SplitMix64
  // stream: 64 signs per draw, one per coefficient whether it is used or not.
  std::uint64_t h = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i <= n; ++i) {
    h = (h ^ in[i]) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 64 == 0) {
      h += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = h;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      bits = z ^ (z >> 31);
    }
    const u32 a = in[i] % q;
    out[i] = (a & 1u) ? a : ((bits >> (i % 64)) & 1u) ? (a + 1) % q : (a + q - 1) % q;
  }
}

void apply_automorphism(const u32* src, std::size_t N, std::uint32_t t, u32 Q, u32* dst) {
  const std::size_t mask = 2 * N - 1;  // N is a power of two
  std::size_t e = 0;  // i t mod 2N, stepped
  for (std::size_t i = 0; i < N; ++i, e = (e + t) & mask) {
    const u32 v = src[i];
    if (e < N) dst[e] = v;
    else dst[e - N] = v == 0 ? 0 : Q - v;
  }
}

std::size_t AutomorphismKey::body_words(const Params& p) {
  return (p.lwe_dimension * 2 * p.gadget_digits + (p.automorphism_window + 1) * p.gadget_digits) * p.ring_dimension;
}

void AutomorphismKey::init(const Params& params) {
  params_ = params;
  params_.validate();
  require(params_.uses_automorphisms(), "tfhe.AutomorphismKey", "the parameters choose GINX (automorphism_window 0)");
  const std::size_t n = params.lwe_dimension, N = params.ring_dimension, dg = params.gadget_digits;
  rgsw_ = KeyBuffer<u32>(n * N * 2 * dg * 2);
  automorphisms_ = KeyBuffer<u32>((params.automorphism_window + 1) * N * dg * 2);
  exponents_.assign(params.automorphism_window + 1, static_cast<std::uint32_t>(2 * N - kGenerator));  // k = 0: -5
  std::uint64_t power = 1;
  for (std::size_t k = 1; k <= params.automorphism_window; ++k) {
    power = power * kGenerator % (2 * N);
    exponents_[k] = static_cast<std::uint32_t>(power);
  }
  // The walk visits -5^j for j = N/2-1 .. 1, then -1, then 5^j likewise, then 1 (rotate).
  const std::size_t J = N / 2 - 1;
  rank_of_.assign(2 * N, 0);
  std::uint64_t x = 1;
  for (std::size_t j = 0; j < N / 2; ++j, x = x * kGenerator % (2 * N)) {
    rank_of_[2 * N - x] = static_cast<std::uint32_t>(J - j);
    rank_of_[x] = static_cast<std::uint32_t>(J + 1 + J - j);
  }
}

u32* AutomorphismKey::row(std::size_t t, std::size_t i, std::size_t r) {
  const std::size_t N = params_.ring_dimension, dg = params_.gadget_digits;
  // The row's first chunk; store() strides over the chunks.
  return t == 0 ? rgsw_.data() + i * N * 2 * dg * 2 + r * 2 * kernels::kChunk
                : automorphisms_.data() + i * N * dg * 2 + r * 2 * kernels::kChunk;
}

const u32* AutomorphismKey::key(std::size_t t, std::size_t i) const {
  const std::size_t N = params_.ring_dimension, dg = params_.gadget_digits;
  return t == 0 ? rgsw_.data() + i * N * 2 * dg * 2 : automorphisms_.data() + i * N * dg * 2;
}

void AutomorphismKey::store(u32* at, std::size_t rows, const Ntt32& ntt, const u32* ahat, const u32* bhat) const {
  constexpr std::size_t W = kernels::kChunk;
  for (std::size_t s = 0; s < params_.ring_dimension; ++s) {
    u32* dst = at + (s / W) * rows * 2 * W + s % W;
    dst[0] = ntt.to_montgomery(bhat[s]);
    dst[W] = ntt.to_montgomery(ahat[s]);
  }
}

AutomorphismKey::AutomorphismKey(const SecretKey& key, const Ntt32& ntt, Prng& prng) {
  init(key.params());
  const Params& p = params_;
  const std::size_t n = p.lwe_dimension, N = p.ring_dimension, dg = p.gadget_digits;
  const u32 Q = p.ring_modulus;
  seed_ = prng.next_seed();
  Prng public_a = Prng::from_seed(seed_);
  const std::vector<u32> g = gadget_factors(p);
  std::vector<u32> z = ternary_mod(key.ring(), Q), zhat = z, A(N), E(N), M(N);
  ntt.forward(zhat.data());
  std::vector<std::int64_t> e(N);
  // B = A z + e + m (message m in the evaluation form) for `rows` rows of row(t, i, .).
  auto encrypt_rows = [&](std::size_t t, std::size_t i, std::size_t rows, auto message) {
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < N; ++c) A[c] = static_cast<u32>(public_a.uniform_below(Q));
      sample_gaussian(prng, e.data(), N, p.sigma);
      for (std::size_t c = 0; c < N; ++c) E[c] = e[c] < 0 ? static_cast<u32>(Q + e[c]) : static_cast<u32>(e[c]);
      ntt.forward(A.data());
      ntt.forward(E.data());
      for (std::size_t s = 0; s < N; ++s) E[s] = add_mod(add_mod(mul_mod(A[s], zhat[s], Q), E[s], Q), message(r, s), Q);
      store(row(t, i, r), rows, ntt, A.data(), E.data());
    }
  };
  // RGSW(X^{s_i}): + g_r X^s on the b rows, - g_r X^s z on the a rows (the phase of the
  // a-digit rows carries the message times -z, as in bootstrapper.h).
  for (std::size_t i = 0; i < n; ++i) {
    std::fill(M.begin(), M.end(), 0u);
    const int s = key.lwe()[i];
    if (s >= 0) M[static_cast<std::size_t>(s)] = 1;
    else M[N - 1] = Q - 1;  // X^-1 = -X^(N-1)
    ntt.forward(M.data());
    encrypt_rows(0, i, 2 * dg, [&](std::size_t r, std::size_t slot) {
      const u32 m = mul_mod(g[r % dg], M[slot], Q);
      return r < dg ? m : neg_mod(mul_mod(m, zhat[slot], Q), Q);
    });
  }
  // Automorphism keys: - g_r z(X^t), so that the a half's digits times the key add -a(X^t) z(X^t).
  for (std::size_t k = 0; k <= p.automorphism_window; ++k) {
    apply_automorphism(z.data(), N, exponent(k), Q, M.data());
    ntt.forward(M.data());
    encrypt_rows(1, k, dg, [&](std::size_t r, std::size_t slot) { return neg_mod(mul_mod(g[r], M[slot], Q), Q); });
  }
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
  secure_zero(E.data(), E.size() * sizeof(u32));
  secure_zero(M.data(), M.size() * sizeof(u32));
  secure_zero(z.data(), z.size() * sizeof(u32));
  secure_zero(zhat.data(), zhat.size() * sizeof(u32));
}

AutomorphismKey::AutomorphismKey(const Params& params, const Ntt32& ntt, const Prng::Seed& seed, const u32* bodies) {
  init(params);
  const std::size_t n = params.lwe_dimension, N = params.ring_dimension, dg = params.gadget_digits;
  const u32 Q = params.ring_modulus;
  seed_ = seed;
  Prng public_a = Prng::from_seed(seed_);
  std::vector<u32> A(N), B(N);
  const u32* b = bodies;
  auto load_rows = [&](std::size_t t, std::size_t i, std::size_t rows) {
    for (std::size_t r = 0; r < rows; ++r, b += N) {
      for (std::size_t c = 0; c < N; ++c) A[c] = static_cast<u32>(public_a.uniform_below(Q));
      for (std::size_t c = 0; c < N; ++c) {
        require(b[c] < Q, "tfhe.AutomorphismKey", "a body coefficient is not below Q");
        B[c] = b[c];
      }
      ntt.forward(A.data());
      ntt.forward(B.data());
      store(row(t, i, r), rows, ntt, A.data(), B.data());
    }
  };
  for (std::size_t i = 0; i < n; ++i) load_rows(0, i, 2 * dg);
  for (std::size_t k = 0; k <= params.automorphism_window; ++k) load_rows(1, k, dg);
}

std::vector<u32> AutomorphismKey::bodies(const Ntt32& ntt) const {
  constexpr std::size_t W = kernels::kChunk;
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension, dg = params_.gadget_digits;
  const u32 Q = params_.ring_modulus;
  std::vector<u32> out(body_words(params_));
  u32* b = out.data();
  auto save_rows = [&](const u32* first, std::size_t rows) {
    for (std::size_t r = 0; r < rows; ++r, b += N) {
      for (std::size_t s = 0; s < N; ++s) {
        const u32 v = Ntt32::montgomery_reduce(first[(s / W) * rows * 2 * W + r * 2 * W + s % W], Q, ntt.neg_q_inverse());
        b[s] = v >= Q ? v - Q : v;
      }
      ntt.inverse(b);
    }
  };
  for (std::size_t i = 0; i < n; ++i) save_rows(key(0, i), 2 * dg);
  for (std::size_t k = 0; k <= params_.automorphism_window; ++k) save_rows(key(1, k), dg);
  return out;
}

void AutomorphismKey::multiply(u32* acc, std::size_t i, const u32* next_key, const Ntt32& ntt, u32* D) const {
  const std::size_t N = params_.ring_dimension, dg = params_.gadget_digits, R = 2 * dg;
  const Isa isa = ntt.isa();
  kernels::decompose(isa, acc, N, params_, D);
  kernels::decompose(isa, acc + N, N, params_, D + dg * N);
  for (std::size_t r = 0; r < R; ++r) ntt.forward(D + r * N);
  // acc is consumed by the digits: the products land in it.
  kernels::mac(isa, {D, R, N, key(0, i), params_.ring_modulus, ntt.neg_q_inverse(), acc, acc + N,
                     reinterpret_cast<const char*>(next_key)});
  ntt.inverse(acc);
  ntt.inverse(acc + N);
}

void AutomorphismKey::automorphism(u32* acc, std::size_t k, const Ntt32& ntt, u32* D, u32* copy) const {
  const std::size_t N = params_.ring_dimension, dg = params_.gadget_digits;
  const u32 Q = params_.ring_modulus, t = exponent(k);
  std::memcpy(copy, acc, 2 * N * sizeof(u32));
  apply_automorphism(copy, N, t, Q, acc);
  apply_automorphism(copy + N, N, t, Q, acc + N);
  // (b(X^t), a(X^t)) is under z(X^t); b(X^t) + sum_r D_r K_r, sum_r D_r K'_r is under z.
  const Isa isa = ntt.isa();
  kernels::decompose(isa, acc + N, N, params_, D);
  for (std::size_t r = 0; r < dg; ++r) ntt.forward(D + r * N);
  u32* out_b = copy;
  kernels::mac(isa, {D, dg, N, key(1, k), Q, ntt.neg_q_inverse(), out_b, acc + N, nullptr});
  ntt.inverse(out_b, acc);
  ntt.inverse(acc + N);
}

void AutomorphismKey::rotate(const u32* in, const u32* f, const Ntt32& ntt, u32* acc, bool exact) const {
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension, J = N / 2 - 1;
  const std::size_t w = params_.automorphism_window;
  const u32 q = params_.lwe_modulus(), Q = params_.ring_modulus;
  // The products (coefficient, class rank): one per coefficient at its odd exponent and,
  // when exact, one per even a_i at the rest, a_i - odd_i = -+1 (the classes of -1 and 1).
  std::vector<u32> odd(n);
  odd_exponents(in, n, q, odd.data());
  std::vector<std::uint32_t> who, rank;
  who.reserve(2 * n), rank.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    who.push_back(static_cast<std::uint32_t>(i)), rank.push_back(rank_of_[odd[i]]);
    const u32 a = in[i] % q;
    if (exact && a != odd[i]) who.push_back(static_cast<std::uint32_t>(i)), rank.push_back(rank_of_[(a + q - odd[i]) % q]);
  }
  // In the order their classes are visited (a counting sort by rank): order[start[r] ..
  // start[r + 1]) holds the class of rank r.
  const std::size_t products = who.size();
  std::vector<std::uint32_t> start(N + 1, 0), order(products);
  for (std::size_t k = 0; k < products; ++k) ++start[rank[k] + 1];
  for (std::size_t r = 0; r < N; ++r) start[r + 1] += start[r];
  {
    std::vector<std::uint32_t> next(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < products; ++k) order[next[rank[k]]++] = who[k];
  }
  std::vector<u32> D(2 * params_.gadget_digits * N), copy(2 * N);
  apply_automorphism(f, N, exponent(0), Q, acc);  // f(X^-5): the passes map it back to f
  std::fill(acc + N, acc + 2 * N, 0u);
  auto multiply_rank = [&](std::size_t r) {
    for (std::uint32_t at = start[r]; at < start[r + 1]; ++at)  // the next key is the next in order
      multiply(acc, order[at], at + 1 < products ? key(0, order[at + 1]) : nullptr, ntt, D.data());
  };
  std::size_t pending = 0;
  for (std::size_t half = 0; half < 2; ++half) {  // the classes of -5^j, then of 5^j
    const std::size_t first = half * (J + 1);
    for (std::size_t j = J; j >= 1; --j) {
      const std::size_t r = first + J - j;
      if (start[r + 1] > start[r]) {
        if (pending > 0) automorphism(acc, pending, ntt, D.data(), copy.data());
        pending = 0;
        multiply_rank(r);
      }
      if (++pending == w || j == 1) {
        automorphism(acc, pending, ntt, D.data(), copy.data());
        pending = 0;
      }
    }
    multiply_rank(first + J);  // -1, then 1
    if (half == 0) automorphism(acc, 0, ntt, D.data(), copy.data());
  }
}

}  // namespace ringfire::tfhe
