#include "ringfire/tfhe/lwe.h"

#include <algorithm>

#include "ringfire/base/errors.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::tfhe {

namespace {

using u64 = std::uint64_t;

// a uniform mod `modulus` (a power of two here or below 2^32 in general).
void sample_uniform_words(Prng& prng, u32* out, std::size_t count, u32 modulus) {
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<u32>(prng.uniform_below(modulus));
}

// b = <a, s> + mu + e mod modulus, a already drawn.
u32 lwe_body(const u32* a, const std::int8_t* s, std::size_t d, u32 mu, std::int64_t e, u64 modulus) {
  std::int64_t acc = 0;
  for (std::size_t i = 0; i < d; ++i) acc += static_cast<std::int64_t>(a[i]) * s[i];
  acc += static_cast<std::int64_t>(mu) + e;
  const std::int64_t m = static_cast<std::int64_t>(modulus);
  acc %= m;
  if (acc < 0) acc += m;
  return static_cast<u32>(acc);
}

}  // namespace

SecretKey::SecretKey(const Params& params, Prng& prng) : params_(params) {
  params_.validate();
  s_.resize(params.lwe_dimension);
  z_.resize(params.ring_dimension);
  sample_ternary(prng, s_.data(), s_.size());
  sample_ternary(prng, z_.data(), z_.size());
}

SecretKey::SecretKey(const Params& params, const std::vector<std::int8_t>& s, const std::vector<std::int8_t>& z)
    : params_(params), s_(s), z_(z) {
  params_.validate();
  require(s_.size() == params.lwe_dimension && z_.size() == params.ring_dimension, "tfhe.SecretKey",
          "a secret key of " + std::to_string(params.lwe_dimension) + " + " + std::to_string(params.ring_dimension) +
              " coefficients expected");
  auto ternary = [](std::int8_t v) { return v >= -1 && v <= 1; };
  require(std::all_of(s_.begin(), s_.end(), ternary) && std::all_of(z_.begin(), z_.end(), ternary), "tfhe.SecretKey",
          "secret coefficients must be -1, 0 or 1");
}

SecretKey::~SecretKey() {
  secure_zero(s_.data(), s_.size());
  secure_zero(z_.data(), z_.size());
}

void SecretKey::encrypt(const u32* mu, std::size_t count, u32* out, Prng& prng) const {
  const std::size_t n = params_.lwe_dimension;
  const u32 q = params_.lwe_modulus();
  std::vector<std::int64_t> e(count);
  sample_gaussian(prng, e.data(), count, params_.sigma);
  for (std::size_t c = 0; c < count; ++c) {
    require(mu[c] < q, "tfhe.encrypt", [&] { return "a phase is not below q=" + std::to_string(q); });
    u32* ct = out + c * (n + 1);
    sample_uniform_words(prng, ct, n, q);
    ct[n] = lwe_body(ct, s_.data(), n, mu[c], e[c], q);
  }
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
}

void SecretKey::phases(const u32* cts, std::size_t count, u32* out) const {
  const std::size_t n = params_.lwe_dimension;
  const u32 q = params_.lwe_modulus();
  for (std::size_t c = 0; c < count; ++c) {
    const u32* ct = cts + c * (n + 1);
    std::int64_t acc = ct[n];
    for (std::size_t i = 0; i < n; ++i) acc -= static_cast<std::int64_t>(ct[i] % q) * s_[i];
    acc %= q;
    if (acc < 0) acc += q;
    out[c] = static_cast<u32>(acc);
  }
}

void SecretKey::ring_phases(const u32* acc, u32* out) const {
  const std::size_t N = params_.ring_dimension;
  const std::int64_t Q = params_.ring_modulus;
  const u32* a = acc + N;
  for (std::size_t k = 0; k < N; ++k) {
    // (a z)_k = sum_{i <= k} a_i z_{k-i} - sum_{i > k} a_i z_{N+k-i}.
    std::int64_t s = 0;
    for (std::size_t i = 0; i <= k; ++i) s += static_cast<std::int64_t>(a[i]) * z_[k - i];
    for (std::size_t i = k + 1; i < N; ++i) s -= static_cast<std::int64_t>(a[i]) * z_[N + k - i];
    std::int64_t r = (static_cast<std::int64_t>(acc[k]) - s) % Q;
    out[k] = static_cast<u32>(r < 0 ? r + Q : r);
  }
}

void switch_modulus(const u32* in, std::size_t count, u64 from, u64 to, u32* out) {
  for (std::size_t i = 0; i < count; ++i) {
    const u64 r = (static_cast<u64>(in[i]) * to + from / 2) / from;
    out[i] = static_cast<u32>(r % to);
  }
}

std::size_t KeySwitchKey::entries() const {
  return params_.ring_dimension * params_.ks_digits * ((std::size_t{1} << params_.ks_base_log) - 1);
}

namespace {

// a -= rows[0] + ... + rows[K - 1], word by word mod 2^W: the output is loaded
// and stored once for K rows (one row at a time, those loads and stores bounded
// the key switch).
template <class W, std::size_t K>
void subtract_rows(W* __restrict a, const W* const* rows, std::size_t width) {
  for (std::size_t k = 0; k < width; ++k) {
    W sum = rows[0][k];
    for (std::size_t r = 1; r < K; ++r) sum = static_cast<W>(sum + rows[r][k]);
    a[k] = static_cast<W>(a[k] - sum);
  }
}

template <class W>
void subtract_rows(W* a, const W* const* rows, std::size_t count, std::size_t width) {
  std::size_t r = 0;
  for (; r + 4 <= count; r += 4) subtract_rows<W, 4>(a, rows + r, width);
  switch (count - r) {
    case 3: subtract_rows<W, 3>(a, rows + r, width); break;
    case 2: subtract_rows<W, 2>(a, rows + r, width); break;
    case 1: subtract_rows<W, 1>(a, rows + r, width); break;
    default: break;
  }
}

// The key switch over a table of W-bit words (sums wrap mod 2^W, which Q_ks
// divides) for `count` ciphertexts, kBatchLimit at a time: the rows of a
// coefficient are read from memory once for the batch (the table is tens of
// MB: one ciphertext at a time, its reading bounds the key switch), and each
// ciphertext subtracts the rows its digits pick in one pass.
template <class W>
void apply_table_many(const Params& p, const W* table, const u32* in, std::size_t count, u32* out) {
  const std::size_t n = p.lwe_dimension, N = p.ring_dimension, width = n + 1;
  const u32 base = 1u << p.ks_base_log, mask = base - 1;
  const std::size_t per_coefficient = p.ks_digits * (base - 1);
  std::vector<W> acc(KeySwitchKey::kBatchLimit * width);
  std::vector<const W*> picked(p.ks_digits);
  for (std::size_t first = 0; first < count; first += KeySwitchKey::kBatchLimit) {
    const std::size_t take = std::min(KeySwitchKey::kBatchLimit, count - first);
    const u32* batch = in + first * (N + 1);
    std::fill(acc.begin(), acc.end(), W{0});
    for (std::size_t c = 0; c < take; ++c) acc[c * width + n] = static_cast<W>(batch[c * (N + 1) + N]);
    for (std::size_t i = 0; i < N; ++i) {
      const W* rows = table + i * per_coefficient * width;
      for (std::size_t c = 0; c < take; ++c) {
        u32 x = batch[c * (N + 1) + i];
        std::size_t m = 0;
        for (unsigned j = 0; j < p.ks_digits; ++j, x >>= p.ks_base_log) {
          const u32 v = x & mask;
          if (v != 0) picked[m++] = rows + (j * (base - 1) + (v - 1)) * width;
        }
        subtract_rows(acc.data() + c * width, picked.data(), m, width);
      }
    }
    for (std::size_t c = 0; c < take; ++c)
      for (std::size_t k = 0; k < width; ++k)
        out[(first + c) * width + k] = static_cast<u32>(acc[c * width + k]) & (p.ks_modulus - 1);
  }
}

}  // namespace

u32 KeySwitchKey::word(std::size_t i) const { return wide() ? wide_[i] : narrow_[i]; }

void KeySwitchKey::set_word(std::size_t i, u32 v) {
  if (wide()) wide_[i] = v;
  else narrow_[i] = static_cast<std::uint16_t>(v);
}

void KeySwitchKey::expand(const Params& params, const Prng::Seed& seed) {
  params_ = params;
  params_.validate();
  seed_ = seed;
  const std::size_t n = params.lwe_dimension, width = n + 1;
  if (wide()) wide_ = KeyBuffer<std::uint32_t>(entries() * width);
  else narrow_ = KeyBuffer<std::uint16_t>(entries() * width);
  Prng public_a = Prng::from_seed(seed_);
  std::vector<u32> a(n);
  for (std::size_t entry = 0; entry < entries(); ++entry) {
    sample_uniform_words(public_a, a.data(), n, params.ks_modulus);
    for (std::size_t k = 0; k < n; ++k) set_word(entry * width + k, a[k]);
  }
}

KeySwitchKey::KeySwitchKey(const SecretKey& key, Prng& prng) {
  const Params& p = key.params();
  expand(p, prng.next_seed());
  const std::size_t n = p.lwe_dimension, N = p.ring_dimension, width = n + 1;
  const u32 base = 1u << p.ks_base_log, qks = p.ks_modulus;
  std::vector<std::int64_t> e(entries());
  sample_gaussian(prng, e.data(), e.size(), p.sigma);
  std::vector<u32> a(n);
  const auto& s = key.lwe();
  const auto& z = key.ring();
  std::size_t entry = 0;
  for (std::size_t i = 0; i < N; ++i) {
    for (unsigned j = 0; j < p.ks_digits; ++j) {
      const u64 scale = u64{1} << (j * p.ks_base_log);
      for (u32 v = 1; v < base; ++v, ++entry) {
        for (std::size_t k = 0; k < n; ++k) a[k] = word(entry * width + k);
        const std::int64_t m = static_cast<std::int64_t>(v * scale % qks) * z[i];
        const u32 mu = static_cast<u32>(((m % qks) + qks) % qks);
        set_word(entry * width + n, lwe_body(a.data(), s.data(), n, mu, e[entry], qks));
      }
    }
  }
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
}

KeySwitchKey::KeySwitchKey(const Params& params, const Prng::Seed& seed, const u32* bodies) {
  expand(params, seed);
  const std::size_t width = params.lwe_dimension + 1;
  for (std::size_t entry = 0; entry < entries(); ++entry) {
    require(bodies[entry] < params.ks_modulus, "tfhe.KeySwitchKey", "a body is not below Q_ks");
    set_word(entry * width + params.lwe_dimension, bodies[entry]);
  }
}

std::vector<u32> KeySwitchKey::bodies() const {
  const std::size_t width = params_.lwe_dimension + 1;
  std::vector<u32> out(entries());
  for (std::size_t entry = 0; entry < out.size(); ++entry) out[entry] = word(entry * width + params_.lwe_dimension);
  return out;
}

void KeySwitchKey::apply(const u32* in, u32* out) const {
  apply_many(in, 1, out);
}

void KeySwitchKey::apply_many(const u32* in, std::size_t count, u32* out) const {
  if (wide()) apply_table_many(params_, wide_.data(), in, count, out);
  else apply_table_many(params_, narrow_.data(), in, count, out);
}

}  // namespace ringfire::tfhe
