#include "ringfire/tfhe/torus_keys.h"

#include <algorithm>
#include <cstring>

#include "ringfire/base/errors.h"
#include "torus_kernels.h"

namespace ringfire::tfhe {

namespace {

void sample_bits(Prng& prng, std::vector<std::uint8_t>& out) {
  for (std::size_t i = 0; i < out.size(); i += 64) {
    const u64 word = prng.next_u64();
    for (std::size_t j = i; j < std::min(out.size(), i + 64); ++j) out[j] = static_cast<std::uint8_t>((word >> (j - i)) & 1);
  }
}

void sample_uniform(Prng& prng, u64* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = prng.next_u64();
}

u64 dot(const u64* a, const std::uint8_t* key, std::size_t d) {
  u64 acc = 0;
  for (std::size_t i = 0; i < d; ++i) acc += a[i] & (0 - static_cast<u64>(key[i]));
  return acc;
}

void check_bits(const std::vector<std::uint8_t>& v) {
  require(std::all_of(v.begin(), v.end(), [](std::uint8_t b) { return b <= 1; }), "tfhe.TorusSecretKey",
          "secret coefficients must be 0 or 1");
}

}  // namespace

std::int64_t sample_tuniform(Prng& prng, unsigned bound_log2) {
  // b + 2 uniform bits u; (u + 1) / 2 is uniform over 0..2^(b+1) with both
  // ends at half weight.
  const u64 u = prng.next_u64() & ((u64{1} << (bound_log2 + 2)) - 1);
  return static_cast<std::int64_t>((u + 1) >> 1) - (std::int64_t{1} << bound_log2);
}

TorusSecretKey::TorusSecretKey(const TorusParams& params, Prng& prng) : params_(params) {
  params_.validate();
  s_.resize(params.lwe_dimension);
  z_.resize(params.ring_dimension);
  sample_bits(prng, s_);
  sample_bits(prng, z_);
}

TorusSecretKey::TorusSecretKey(const TorusParams& params, const std::vector<std::uint8_t>& s,
                               const std::vector<std::uint8_t>& z)
    : params_(params), s_(s), z_(z) {
  params_.validate();
  require(s_.size() == params.lwe_dimension && z_.size() == params.ring_dimension, "tfhe.TorusSecretKey",
          "a secret key of " + std::to_string(params.lwe_dimension) + " + " + std::to_string(params.ring_dimension) +
              " coefficients expected");
  check_bits(s_);
  check_bits(z_);
}

TorusSecretKey::~TorusSecretKey() {
  secure_zero(s_.data(), s_.size());
  secure_zero(z_.data(), z_.size());
}

void TorusSecretKey::encrypt(const u64* mu, std::size_t count, u64* out, Prng& prng) const {
  const std::size_t N = params_.ring_dimension;
  for (std::size_t c = 0; c < count; ++c) {
    u64* ct = out + c * (N + 1);
    sample_uniform(prng, ct, N);
    ct[N] = dot(ct, z_.data(), N) + mu[c] + static_cast<u64>(sample_tuniform(prng, params_.glwe_noise_log2));
  }
}

void TorusSecretKey::phases(const u64* cts, std::size_t count, u64* out) const {
  const std::size_t N = params_.ring_dimension;
  for (std::size_t c = 0; c < count; ++c) out[c] = cts[c * (N + 1) + N] - dot(cts + c * (N + 1), z_.data(), N);
}

void TorusSecretKey::small_phases(const u64* cts, std::size_t count, u64* out) const {
  const std::size_t n = params_.lwe_dimension;
  for (std::size_t c = 0; c < count; ++c) out[c] = cts[c * (n + 1) + n] - dot(cts + c * (n + 1), s_.data(), n);
}

void multiply_by_binary(const NegacyclicFft& fft, const u64* a, const double* z_re, const double* z_im, u64* out) {
  const std::size_t N = fft.ring_dimension(), M = fft.points();
  std::vector<std::int64_t> piece(N);
  std::vector<double> re(M), im(M), acc_re(M), acc_im(M);
  std::vector<u64> part(N);
  std::fill(out, out + N, u64{0});
  for (unsigned shift = 0; shift < 64; shift += 16) {
    for (std::size_t j = 0; j < N; ++j) piece[j] = static_cast<std::int64_t>((a[j] >> shift) & 0xffff);
    fft.forward(piece.data(), re.data(), im.data());
    std::fill(acc_re.begin(), acc_re.end(), 0.0), std::fill(acc_im.begin(), acc_im.end(), 0.0);
    multiply_accumulate(re.data(), im.data(), z_re, z_im, acc_re.data(), acc_im.data(), M);
    std::fill(part.begin(), part.end(), u64{0});
    fft.backward_add(acc_re.data(), acc_im.data(), part.data());
    for (std::size_t j = 0; j < N; ++j) out[j] += part[j] << shift;
  }
}

namespace {

// round(w / 2^32) mod 2^32
inline std::uint32_t top_word(u64 w) { return static_cast<std::uint32_t>((w >> 32) + ((w >> 31) & 1)); }

constexpr unsigned kDroppedBits = 64 - TorusKeySwitchKey::kWordBits;

// round(w / 2^40) mod 2^24: a table word's top 24 bits (TorusKeySwitchKey::kWordBits)
inline std::uint32_t top_24_bits(u64 w) {
  return static_cast<std::uint32_t>((w >> kDroppedBits) + ((w >> (kDroppedBits - 1)) & 1)) & 0xFFFFFFu;
}

// w's place in a KeySwitchBlock: w = low + high 2^16 (mod 2^24), low in [-2^15, 2^15).
inline void split_word(std::uint32_t w, std::int16_t& low, std::uint8_t& high) {
  const std::int32_t l = static_cast<std::int32_t>((w + 0x8000u) & 0xFFFFu) - 0x8000;
  low = static_cast<std::int16_t>(l);
  high = static_cast<std::uint8_t>(((w - static_cast<std::uint32_t>(l)) >> 16) & 0xFFu);
}

}  // namespace

TorusKeySwitchKey::TorusKeySwitchKey(const TorusSecretKey& key, Prng& prng) : params_(key.params()) {
  const std::size_t N = params_.ring_dimension, n = params_.lwe_dimension, L = params_.ks_levels;
  seed_ = prng.next_seed();
  Prng masks = Prng::from_seed(seed_);
  bodies_.resize(N * L);
  std::vector<u64> a(n);
  for (std::size_t j = 0; j < N; ++j)
    for (std::size_t l = 1; l <= L; ++l) {
      sample_uniform(masks, a.data(), n);
      const u64 message = static_cast<u64>(key.ring()[j]) << (64 - params_.ks_base_log * l);
      bodies_[j * L + (l - 1)] =
          dot(a.data(), key.lwe().data(), n) + message + static_cast<u64>(sample_tuniform(prng, params_.lwe_noise_log2));
    }
  expand();
}

TorusKeySwitchKey::TorusKeySwitchKey(const TorusParams& params, const Prng::Seed& seed, const u64* bodies)
    : params_(params), seed_(seed) {
  params_.validate();
  bodies_.assign(bodies, bodies + params.ring_dimension * params.ks_levels);
  expand();
}

void TorusKeySwitchKey::expand() {
  const std::size_t N = params_.ring_dimension, n = params_.lwe_dimension, L = params_.ks_levels;
  constexpr std::size_t kLanes = KeySwitchBlock::kLanes, kRows = KeySwitchBlock::kRows;
  require(N % kRows == 0, "tfhe.key_switch", "the ring dimension must be a multiple of 4");
  isa_ = params_.ks_base_log <= 7 ? default_isa() : Isa::scalar;
  const bool blocked = isa_ != Isa::scalar;
  blocks_per_row_ = (n + 1 + kLanes - 1) / kLanes;
  if (blocked) rows_ = KeyBuffer<KeySwitchBlock>(N * L / kRows * blocks_per_row_);  // zeroed: words past n
  else words_ = KeyBuffer<std::uint32_t>(N * L * (n + 1));
  Prng masks = Prng::from_seed(seed_);
  std::vector<u64> a(n);
  for (std::size_t r = 0; r < N * L; ++r) {
    sample_uniform(masks, a.data(), n);
    const std::size_t slot = r % kRows;
    // Rounding the masks moves the row's phase by -sum_t e_t s_t (e_t = the kept
    // word minus a_t). The server knows every e_t but not s; the part the key's
    // mean 1/2 carries goes into the body, which leaves sum_t e_t (s_t - 1/2):
    // half the variance (the centred modulus switch's reasoning).
    std::int64_t rounding = 0;
    for (std::size_t t = 0; t <= n; ++t) {
      const u64 word = t < n ? a[t] : bodies_[r] + static_cast<u64>(rounding / 2);
      const std::uint32_t w = top_24_bits(word);
      if (t < n) rounding += static_cast<std::int64_t>((static_cast<u64>(w) << kDroppedBits) - word);
      if (!blocked) {
        words_[r * (n + 1) + t] = w << 8;
        continue;
      }
      KeySwitchBlock& b = rows_[r / kRows * blocks_per_row_ + t / kLanes];
      const std::size_t k = t % kLanes;
      split_word(w, slot < 2 ? b.low01[k][slot] : b.low23[k][slot - 2], b.high[k][slot]);
    }
  }
}

void TorusKeySwitchKey::apply(const u64* in, std::uint32_t* out) const { apply_many(in, 1, out); }

void TorusKeySwitchKey::subtract_four_rows(std::uint32_t* o, std::size_t first_row, const std::uint32_t* d) const {
  const std::size_t count = params_.lwe_dimension + 1;
  if (isa_ != Isa::scalar) {
    const KeySwitchBlock* b = rows_.data() + first_row / KeySwitchBlock::kRows * blocks_per_row_;
    if (isa_ == Isa::avx512) return torus_kernels::subtract_four_rows_wide(o, b, d, count);
    return torus_kernels::subtract_four_rows_narrow(o, b, d, count);
  }
  // One word at a time, from the same 24-bit words as plain rows (w 2^8), which
  // compilers vectorize with their own lanes.
  const std::uint32_t* __restrict w0 = words_.data() + first_row * count;
  const std::uint32_t* __restrict w1 = w0 + count;
  const std::uint32_t* __restrict w2 = w1 + count;
  const std::uint32_t* __restrict w3 = w2 + count;
  for (std::size_t t = 0; t < count; ++t) o[t] -= d[0] * w0[t] + d[1] * w1[t] + d[2] * w2[t] + d[3] * w3[t];
}

void TorusKeySwitchKey::apply_many(const u64* __restrict in, std::size_t count, std::uint32_t* __restrict out) const {
  const std::size_t N = params_.ring_dimension, n = params_.lwe_dimension, L = params_.ks_levels;
  const unsigned B = params_.ks_base_log, shift = 64 - B * static_cast<unsigned>(L);
  const u64 mask = (u64{1} << B) - 1, half = u64{1} << (B - 1);
  constexpr std::size_t kRows = KeySwitchBlock::kRows, kMaxLevels = 64;
  std::fill(out, out + count * (n + 1), std::uint32_t{0});  // the bodies come last (below)
  // The table's rows in (j, l) order, four to a block: four coefficients
  // make L whole blocks, whatever L is.
  std::uint32_t digits[kBatchLimit][kRows * kMaxLevels];
  // Rounding each a_j to its top B L bits moves the phase by -sum_j r_j z_j (r_j: the
  // rounded a_j minus a_j). As the table's masks (expand), the part the big key's mean
  // 1/2 carries is known here and goes into the body: sum_j r_j (z_j - 1/2) remains,
  // half the variance.
  std::int64_t rounding[kBatchLimit];
  for (std::size_t first = 0; first < count; first += kBatchLimit) {
    const std::size_t take = std::min(kBatchLimit, count - first);
    std::fill(rounding, rounding + take, std::int64_t{0});
    for (std::size_t j0 = 0; j0 < N; j0 += kRows) {
      // The top B L bits of each ciphertext's a_j, rounded, as signed digits
      // (level L first), each taken mod 2^32.
      for (std::size_t c = 0; c < take; ++c)
        for (std::size_t j = j0; j < j0 + kRows; ++j) {
          const u64 a = in[(first + c) * (N + 1) + j];
          u64 r = (a >> shift) + ((a >> (shift - 1)) & 1);
          rounding[c] += static_cast<std::int64_t>((r << shift) - a);
          for (std::size_t l = L; l >= 1; --l) {
            const u64 d = r & mask, carry = d >= half ? 1 : 0;
            r = (r >> B) + carry;
            digits[c][(j - j0) * L + l - 1] = static_cast<std::uint32_t>(d - (carry << B));
          }
        }
      // These L blocks of rows are read from memory once for the whole batch
      // (the first ciphertext brings them into the cache), and each
      // ciphertext's words are loaded and stored once per four rows.
      for (std::size_t c = 0; c < take; ++c) {
        std::uint32_t* __restrict o = out + (first + c) * (n + 1);
        for (std::size_t g = 0; g < L; ++g) subtract_four_rows(o, j0 * L + g * kRows, digits[c] + g * kRows);
      }
    }
    for (std::size_t c = 0; c < take; ++c)  // b, with the rounding's known part, rounded to 32 bits
      out[(first + c) * (n + 1) + n] += top_word(in[(first + c) * (N + 1) + N] + static_cast<u64>(rounding[c] / 2));
  }
}

namespace {

// What each RGSW of the bootstrapping key encrypts: s_i (one bit per step),
// or, for groups of g bits, whether the group's bits are pattern p, for each
// p in [1, 2^g) (bit j of p: s_{g k + j}), group after group.
std::vector<std::uint8_t> bootstrap_key_messages(const TorusParams& params, const std::vector<std::uint8_t>& s) {
  const unsigned g = params.grouping;
  if (g <= 1) return s;
  std::vector<std::uint8_t> out;
  out.reserve(params.bootstrap_key_count());
  for (std::size_t k = 0; k < params.lwe_dimension; k += g)
    for (unsigned p = 1; p < (1u << g); ++p) {
      std::uint8_t match = 1;
      for (unsigned j = 0; j < g; ++j) match &= static_cast<std::uint8_t>(((p >> j) & 1) == s[k + j]);
      out.push_back(match);
    }
  return out;
}

// Wipes the secret temporaries it is given when it goes out of scope, on
// every way out (an allocation that throws included).
class WipeOnExit {
 public:
  template <class... Vectors>
  explicit WipeOnExit(Vectors&... vectors) : parts_{{vectors.data(), vectors.size() * sizeof(*vectors.data())}...} {}
  ~WipeOnExit() {
    for (const auto& [data, bytes] : parts_) secure_zero(data, bytes);
  }
  WipeOnExit(const WipeOnExit&) = delete;
  WipeOnExit& operator=(const WipeOnExit&) = delete;

 private:
  std::vector<std::pair<void*, std::size_t>> parts_;
};

}  // namespace

TorusBootstrapKey::TorusBootstrapKey(const TorusSecretKey& key, const NegacyclicFft& fft, Prng& prng)
    : params_(key.params()) {
  const std::size_t N = params_.ring_dimension, M = N / 2, n = params_.bootstrap_key_count(), L = params_.pbs_levels;
  std::vector<std::uint8_t> messages = bootstrap_key_messages(params_, key.lwe());
  // z's transform, for the exact products A z.
  std::vector<std::int64_t> zi(key.ring().begin(), key.ring().end());
  std::vector<double> z_re(M), z_im(M);
  const WipeOnExit wipe(messages, zi, z_re, z_im);
  seed_ = prng.next_seed();
  Prng masks = Prng::from_seed(seed_);
  bodies_.resize(n * 2 * L * N);
  fft.forward(zi.data(), z_re.data(), z_im.data());
  std::vector<u64> A(N);
  for (std::size_t i = 0; i < n; ++i) {
    const u64 s_i = messages[i];
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t l = 1; l <= L; ++l) {
        sample_uniform(masks, A.data(), N);
        u64* B = bodies_.data() + ((i * 2 + c) * L + (l - 1)) * N;
        multiply_by_binary(fft, A.data(), z_re.data(), z_im.data(), B);
        for (std::size_t j = 0; j < N; ++j) B[j] += static_cast<u64>(sample_tuniform(prng, params_.glwe_noise_log2));
        const u64 message = s_i << (64 - params_.pbs_base_log * l);
        if (c == 1) {
          B[0] += message;
        } else {
          for (std::size_t j = 0; j < N; ++j) B[j] -= message & (0 - static_cast<u64>(key.ring()[j]));  // - s_i g_l z
        }
      }
  }
  expand(fft);
}

TorusBootstrapKey::TorusBootstrapKey(const TorusParams& params, const NegacyclicFft& fft, const Prng::Seed& seed,
                                     const u64* bodies)
    : params_(params), seed_(seed) {
  params_.validate();
  require(fft.ring_dimension() == params.ring_dimension, "tfhe.TorusBootstrapKey", "the transform's N differs");
  bodies_.assign(bodies, bodies + params.bootstrap_key_count() * 2 * params.pbs_levels * params.ring_dimension);
  expand(fft);
}

void TorusBootstrapKey::expand(const NegacyclicFft& fft) {
  const std::size_t N = params_.ring_dimension, M = N / 2, count = params_.bootstrap_key_count(), L = params_.pbs_levels;
  const std::size_t rows = 2 * L;
  patterns_ = params_.grouping <= 1 ? 1 : (std::size_t{1} << params_.grouping) - 1;
  step_stride_ = patterns_ * rows * 4 * M;
  lanes_ = fft.wide() ? kWideLanes : kNarrowLanes;
  const std::size_t lanes = lanes_;
  data_ = KeyBuffer<double>(count * rows * 4 * M);
  Prng masks = Prng::from_seed(seed_);
  std::vector<u64> A(N);
  std::vector<std::int64_t> words(N);
  std::vector<double> re(M), im(M);
  // One transformed polynomial into its place: part 0..3 = A re, A im, B re, B im.
  auto store = [&](const u64* poly, std::size_t key, std::size_t r, std::size_t part) {
    for (std::size_t j = 0; j < N; ++j) words[j] = static_cast<std::int64_t>(poly[j]);
    fft.forward(words.data(), re.data(), im.data());
    double* step = data_.data() + key / patterns_ * step_stride_;
    const std::size_t p = key % patterns_;
    for (std::size_t h = 0; h < 2; ++h) {  // real, imaginary
      const double* v = h == 0 ? re.data() : im.data();
      for (std::size_t j = 0; j < M; ++j)
        step[(j / lanes) * patterns_ * rows * 4 * lanes + ((p * rows + r) * 4 + part + h) * lanes + j % lanes] = v[j];
    }
  };
  for (std::size_t key = 0; key < count; ++key)
    for (std::size_t r = 0; r < rows; ++r) {  // rows in order c L + l, as the bodies
      sample_uniform(masks, A.data(), N);
      store(A.data(), key, r, 0);
      store(bodies_.data() + (key * rows + r) * N, key, r, 2);
    }
}

}  // namespace ringfire::tfhe
