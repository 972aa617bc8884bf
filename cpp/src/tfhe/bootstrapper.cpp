#include "ringfire/tfhe/bootstrapper.h"

#include <algorithm>
#include <array>

#include "blind_rotation_kernels.h"
#include "key_generation.h"
#include "mod32.h"
#include "ringfire/base/errors.h"
#include "ringfire/base/parallel.h"
#include "ringfire/rlwe/sampling.h"

namespace ringfire::tfhe {

namespace {

// Chunks of a step's key (kernels::kChunk slots, R x 4 x 16 words: 1.5 KiB each for
// d_g = 3) that batched accumulators take in turn: a block of 12 KiB (4 and 16 measured the
// same here).
constexpr std::size_t kKeyBlockChunks = 8;

// dst = X^k src in Z_Q[X]/(X^N + 1), k in [0, 2N).
void rotate(const u32* src, std::size_t N, std::size_t k, u32 Q, u32* dst) {
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t e = (i + k) % (2 * N);
    const u32 v = src[i];
    if (e < N) dst[e] = v;
    else dst[e - N] = neg_mod(v, Q);
  }
}

}  // namespace

void BootstrapKey::init(const Params& params) {
  params_ = params;
  params_.validate();
  stride_ = params.ring_dimension * 2 * params.gadget_digits * 4;
  data_ = KeyBuffer<u32>(params.lwe_dimension * stride_);
}

void BootstrapKey::store_row(const Ntt32& ntt, std::size_t i, std::size_t t, std::size_t r, const u32* ahat,
                             const u32* bhat) {
  constexpr std::size_t W = kernels::kChunk;
  const std::size_t N = params_.ring_dimension, R = 2 * params_.gadget_digits;
  u32* out = data_.data() + i * stride_;
  for (std::size_t s = 0; s < N; ++s) {
    u32* dst = out + ((s / W) * R + r) * 4 * W + s % W;
    dst[(2 * t) * W] = ntt.to_montgomery(bhat[s]);
    dst[(2 * t + 1) * W] = ntt.to_montgomery(ahat[s]);
  }
}

BootstrapKey::BootstrapKey(const SecretKey& key, const Ntt32& ntt, Prng& prng) {
  const Params& p = key.params();
  init(p);
  const std::size_t n = p.lwe_dimension, N = p.ring_dimension, R = 2 * p.gadget_digits;
  const u32 Q = p.ring_modulus;
  seed_ = prng.next_seed();
  Prng public_a = Prng::from_seed(seed_);

  std::vector<u32> zhat = ternary_mod(key.ring(), Q), A(N), E(N);
  ntt.forward(zhat.data());
  std::vector<std::int64_t> e(N);
  const std::vector<u32> gadget = gadget_factors(p);

  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t t = 0; t < 2; ++t) {
      const u32 m = key.lwe()[i] == (t == 0 ? 1 : -1) ? 1 : 0;
      for (std::size_t r = 0; r < R; ++r) {
        const bool on_a = r >= p.gadget_digits;
        const u32 g = m * gadget[r % p.gadget_digits];
        for (std::size_t c = 0; c < N; ++c) A[c] = static_cast<u32>(public_a.uniform_below(Q));
        sample_gaussian(prng, e.data(), N, p.sigma);
        for (std::size_t c = 0; c < N; ++c) E[c] = e[c] < 0 ? static_cast<u32>(Q + e[c]) : static_cast<u32>(e[c]);
        ntt.forward(A.data());
        ntt.forward(E.data());
        for (std::size_t s = 0; s < N; ++s) {
          // B = A z + e, plus m g (b rows) or minus m g z (a rows); NTT(constant) = constant.
          u32 b = add_mod(mul_mod(A[s], zhat[s], Q), E[s], Q);
          if (on_a) b = sub_mod(b, mul_mod(g, zhat[s], Q), Q);
          else b = add_mod(b, g, Q);
          E[s] = b;
        }
        store_row(ntt, i, t, r, A.data(), E.data());
      }
    }
  }
  secure_zero(e.data(), e.size() * sizeof(std::int64_t));
  secure_zero(E.data(), E.size() * sizeof(u32));
  secure_zero(zhat.data(), zhat.size() * sizeof(u32));
}

BootstrapKey::BootstrapKey(const Params& params, const Ntt32& ntt, const Prng::Seed& seed, const u32* bodies) {
  init(params);
  const std::size_t n = params.lwe_dimension, N = params.ring_dimension, R = 2 * params.gadget_digits;
  const u32 Q = params.ring_modulus;
  seed_ = seed;
  Prng public_a = Prng::from_seed(seed_);
  std::vector<u32> A(N), B(N);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t c = 0; c < N; ++c) A[c] = static_cast<u32>(public_a.uniform_below(Q));
        const u32* b = bodies + ((i * 2 + t) * R + r) * N;
        for (std::size_t c = 0; c < N; ++c) {
          require(b[c] < Q, "tfhe.BootstrapKey", "a body coefficient is not below Q");
          B[c] = b[c];
        }
        ntt.forward(A.data());
        ntt.forward(B.data());
        store_row(ntt, i, t, r, A.data(), B.data());
      }
}

std::vector<u32> BootstrapKey::bodies(const Ntt32& ntt) const {
  constexpr std::size_t W = kernels::kChunk;
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension, R = 2 * params_.gadget_digits;
  const u32 Q = params_.ring_modulus;
  std::vector<u32> out(n * 2 * R * N);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t r = 0; r < R; ++r) {
        u32* b = out.data() + ((i * 2 + t) * R + r) * N;
        const u32* src = data_.data() + i * stride_;
        for (std::size_t s = 0; s < N; ++s) {
          const u32 v = Ntt32::montgomery_reduce(src[((s / W) * R + r) * 4 * W + s % W + (2 * t) * W], Q,
                                                 ntt.neg_q_inverse());
          b[s] = v >= Q ? v - Q : v;
        }
        ntt.inverse(b);
      }
  return out;
}

std::unique_ptr<Ntt32> Bootstrapper::make_ntt(const Params& params, Isa isa) {
  params.validate();
  return std::make_unique<Ntt32>(params.ring_dimension, params.ring_modulus, isa);
}

Bootstrapper::Bootstrapper(const SecretKey& key, Prng& prng, Isa isa) : params_(key.params()) {
  ntt_ = make_ntt(params_, isa);
  if (params_.uses_automorphisms()) {
    lmk_ = std::make_unique<AutomorphismKey>(key, *ntt_, prng);
  } else {
    bsk_ = std::make_unique<BootstrapKey>(key, *ntt_, prng);
    build_monomials();
  }
  ksk_ = std::make_unique<KeySwitchKey>(key, prng);
}

Bootstrapper::Bootstrapper(const Params& params, std::unique_ptr<BootstrapKey> bsk, std::unique_ptr<KeySwitchKey> ksk,
                           Isa isa)
    : params_(params), bsk_(std::move(bsk)), ksk_(std::move(ksk)) {
  require(!params_.uses_automorphisms(), "tfhe.Bootstrapper", "these parameters take an LMKCDEY key, not GINX's");
  ntt_ = make_ntt(params_, isa);
  build_monomials();
}

Bootstrapper::Bootstrapper(const Params& params, std::unique_ptr<AutomorphismKey> bsk,
                           std::unique_ptr<KeySwitchKey> ksk, Isa isa)
    : params_(params), lmk_(std::move(bsk)), ksk_(std::move(ksk)) {
  require(params_.uses_automorphisms(), "tfhe.Bootstrapper", "these parameters take a GINX key, not LMKCDEY's");
  require(lmk_ != nullptr && ksk_ != nullptr && lmk_->params().identity() == params_.identity(), "tfhe.Bootstrapper",
          "the keys are missing or were made for other parameters");
  ntt_ = make_ntt(params_, isa);
}

void Bootstrapper::build_monomials() {
  const std::size_t N = params_.ring_dimension;
  const u32 Q = params_.ring_modulus;
  monomials_ = KeyBuffer<u32>(2 * N * N);
  for (std::size_t k = 0; k < 2 * N; ++k) {
    u32* row = monomials_.data() + k * N;
    if (k < N) row[k] = 1;
    else row[k - N] = Q - 1;
    ntt_->forward(row);
    for (std::size_t s = 0; s < N; ++s) row[s] = ntt_->to_montgomery(row[s] == 0 ? Q - 1 : row[s] - 1);
  }
}

void Bootstrapper::step(u32* accs, std::size_t count, std::size_t i, const u32* exponents,
                        const u32* next_exponents, u32* scratch) const {
  const std::size_t N = params_.ring_dimension, R = 2 * params_.gadget_digits, stride = (R + 2) * N;
  const u32 Q = params_.ring_modulus;
  const Isa isa = ntt_->isa();
  const bool last = i + 1 == params_.lwe_dimension;
  const char* next_key = last ? nullptr : reinterpret_cast<const char*>(bsk_->coefficient(i + 1));
  std::array<kernels::ProductArgs, kMaxRotationBatch> items;
  std::array<std::size_t, kMaxRotationBatch> owner;
  std::size_t active = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const u32 e = exponents[j], next = next_exponents[j];
    if (e == 0) continue;  // X^0 - 1 = 0: this accumulator stays as it is
    u32* acc = accs + j * 2 * N;
    u32* D = scratch + j * stride;
    kernels::decompose(isa, acc, N, params_, D);
    kernels::decompose(isa, acc + N, N, params_, D + params_.gadget_digits * N);
    for (std::size_t r = 0; r < R; ++r) ntt_->forward(D + r * N);
    // The first active accumulator prefetches the next step's key for all of them; each its
    // own next monomials.
    items[active] = {D, R, N, bsk_->coefficient(i), monomial(e), monomial(2 * N - e), Q, ntt_->neg_q_inverse(),
                     D + R * N, D + R * N + N, active == 0 ? next_key : nullptr, monomial(next),
                     monomial(2 * N - next), 0, 0};  // the chunk range is set block by block below
    owner[active++] = j;
  }
  // A block of kKeyBlockChunks chunks of the key serves every accumulator in turn while it
  // sits in the nearest caches; one accumulator reads the key in one pass.
  const std::size_t chunks = N / kernels::kChunk, block = active > 1 ? kKeyBlockChunks : chunks;
  for (std::size_t begin = 0; begin < chunks; begin += block) {
    for (std::size_t k = 0; k < active; ++k) {
      items[k].chunk_begin = begin;
      items[k].chunk_end = std::min(chunks, begin + block);
      kernels::product(isa, items[k]);
    }
  }
  for (std::size_t k = 0; k < active; ++k) {
    u32* acc = accs + owner[k] * 2 * N;
    ntt_->inverse(items[k].out_b, acc);
    ntt_->inverse(items[k].out_a, acc + N);
  }
}

void Bootstrapper::check_test_vector(const u32* test_vector) const {
  const u32 Q = params_.ring_modulus;
  for (std::size_t c = 0; c < params_.ring_dimension; ++c)
    require(test_vector[c] < Q, "tfhe.bootstrap",
            [&] { return "a test vector coefficient is not below Q=" + std::to_string(Q); });
}

void Bootstrapper::blind_rotate(const u32* in, const u32* test_vector, u32* acc, bool exact) const {
  check_test_vector(test_vector);
  rotate_blindly(in, test_vector, acc, exact);
}

void Bootstrapper::rotate_blindly(const u32* in, const u32* test_vector, u32* acc, bool exact) const {
  rotate_blindly_many(in, 1, test_vector, acc, exact);
}

void Bootstrapper::rotate_blindly_many(const u32* in, std::size_t count, const u32* test_vector, u32* accs,
                                       bool exact) const {
  require(count >= 1 && count <= kMaxRotationBatch, "tfhe.blind_rotate",
          "a rotation batch holds 1 to " + std::to_string(kMaxRotationBatch) + " ciphertexts, not " +
              std::to_string(count));
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension, width = n + 1;
  const u32 q = params_.lwe_modulus(), Q = params_.ring_modulus;
  // X^-b TV of ciphertext j, where each rotation starts.
  auto start = [&](std::size_t j, u32* dst) { rotate(test_vector, N, (q - in[j * width + n] % q) % q, Q, dst); };
  if (lmk_) {
    std::vector<u32> f(N);
    for (std::size_t j = 0; j < count; ++j) {
      start(j, f.data());
      lmk_->rotate(in + j * width, f.data(), *ntt_, accs + j * 2 * N, exact);
    }
    return;
  }
  for (std::size_t j = 0; j < count; ++j) {
    u32* acc = accs + j * 2 * N;
    start(j, acc);
    std::fill(acc + N, acc + 2 * N, 0u);
  }
  CacheAlignedVector<u32> scratch(count * (2 * params_.gadget_digits + 2) * N);
  std::array<u32, kMaxRotationBatch> exponents{}, next{};
  for (std::size_t j = 0; j < count; ++j) next[j] = in[j * width] % q;
  for (std::size_t i = 0; i < n; ++i) {
    exponents = next;
    for (std::size_t j = 0; j < count; ++j) next[j] = i + 1 < n ? in[j * width + i + 1] % q : 0;
    step(accs, count, i, exponents.data(), next.data(), scratch.data());
  }
}

void Bootstrapper::bootstrap(const u32* in, const u32* test_vector, u32* out) const {
  check_test_vector(test_vector);
  bootstrap_checked(in, test_vector, out, 1);
}

void Bootstrapper::bootstrap_checked(const u32* in, const u32* test_vector, u32* out, std::size_t outputs) const {
  const std::size_t N = params_.ring_dimension;
  CacheAlignedVector<u32> acc(2 * N), extracted(outputs * (N + 1));
  rotate_and_extract(in, 1, test_vector, outputs, 1, acc.data(), extracted.data());
  switch_to_gate(extracted.data(), outputs, out);
}

void Bootstrapper::rotate_and_extract(const u32* in, std::size_t count, const u32* test_vector, std::size_t outputs,
                                      std::size_t batch, u32* accs, u32* extracted) const {
  const std::size_t N = params_.ring_dimension, width = params_.lwe_dimension + 1;
  for (std::size_t first = 0; first < count; first += batch) {
    const std::size_t take = std::min(batch, count - first);
    // Several outputs read consecutive coefficients of a phase made a multiple of their
    // count: LMKCDEY's odd exponents would move it off that grid, so they are made exact.
    rotate_blindly_many(in + first * width, take, test_vector, accs, outputs > 1);
    for (std::size_t j = 0; j < take; ++j)
      for (std::size_t k = 0; k < outputs; ++k)
        extract(accs + j * 2 * N, k, extracted + ((first + j) * outputs + k) * (N + 1));
  }
}

void Bootstrapper::extract(const u32* acc, std::size_t k, u32* out) const {
  // Sample extraction of coefficient k: under z, phase = b_k - sum_j e_j z_j
  // with e_j = a_{k-j} for j <= k and -a_{N+k-j} above (negacyclic).
  const std::size_t N = params_.ring_dimension;
  const u32 Q = params_.ring_modulus;
  const u32* a = acc + N;
  for (std::size_t j = 0; j <= k; ++j) out[j] = a[k - j];
  for (std::size_t j = k + 1; j < N; ++j) out[j] = neg_mod(a[N + k - j], Q);
  out[N] = acc[k];
}

void Bootstrapper::switch_to_gate(u32* extracted, std::size_t count, u32* out) const {
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension;
  switch_modulus(extracted, count * (N + 1), params_.ring_modulus, params_.ks_modulus, extracted);
  std::vector<u32> switched(count * (n + 1));
  ksk_->apply_many(extracted, count, switched.data());
  switch_modulus(switched.data(), count * (n + 1), params_.ks_modulus, params_.lwe_modulus(), out);
}

void Bootstrapper::switch_ring_lwe(const u32* in, std::size_t count, u32* out) const {
  const std::size_t n = params_.lwe_dimension, N = params_.ring_dimension;
  const u32 Q = params_.ring_modulus;
  const u32* end = in + count * (N + 1);
  const u32* bad = std::find_if(in, end, [Q](u32 w) { return w >= Q; });
  if (bad != end) {
    throw_invalid("tfhe.switch_ring_lwe", "ciphertext " + std::to_string((bad - in) / (N + 1)) +
                                              " has a word not below Q = " + std::to_string(Q));
  }
  // The ciphertexts on the library's threads, key-switched kSwitchBatch at a time (the table
  // is read once per KeySwitchKey::kBatchLimit of them).
  auto body = [&](std::size_t begin, std::size_t end) {
    std::vector<u32> extracted(kSwitchBatch * (N + 1));
    for (std::size_t c = begin; c < end; c += kSwitchBatch) {
      const std::size_t take = std::min(kSwitchBatch, end - c);
      std::copy(in + c * (N + 1), in + (c + take) * (N + 1), extracted.begin());
      switch_to_gate(extracted.data(), take, out + c * (n + 1));
    }
  };
  parallel_items(count, body);
}

void Bootstrapper::bootstrap_many(const u32* in, std::size_t count, const u32* test_vector, u32* out, int threads,
                                  std::size_t outputs, std::size_t batch) const {
  require(outputs >= 1 && outputs <= params_.ring_dimension, "tfhe.bootstrap",
          "outputs per ciphertext must lie in [1, N=" + std::to_string(params_.ring_dimension) + "], got " +
              std::to_string(outputs));
  require(batch >= 1 && batch <= kMaxRotationBatch, "tfhe.bootstrap",
          "ciphertexts per rotation batch must lie in [1, " + std::to_string(kMaxRotationBatch) + "], got " +
              std::to_string(batch));
  check_test_vector(test_vector);  // once for the batch
  const std::size_t width = params_.lwe_dimension + 1, N = params_.ring_dimension;
  const std::size_t parts = std::min<std::size_t>(count, threads > 0 ? threads : num_threads());
  // Blind rotations `batch` at a time; their extracted outputs key-switched together,
  // about kSwitchBatch at a time (the key-switching table is read once per kBatchLimit of them).
  const std::size_t per_switch = std::max<std::size_t>(1, kSwitchBatch / outputs);
  auto body = [&](std::size_t begin, std::size_t end) {
    CacheAlignedVector<u32> accs(batch * 2 * N), extracted(per_switch * outputs * (N + 1));
    for (std::size_t first = begin; first < end; first += per_switch) {
      const std::size_t take = std::min(per_switch, end - first);
      rotate_and_extract(in + first * width, take, test_vector, outputs, batch, accs.data(), extracted.data());
      switch_to_gate(extracted.data(), take * outputs, out + first * outputs * width);
    }
  };
  parallel_ranges(count, parts, body);
}

void Bootstrapper::bootstrap_to_ring_many(const u32* in, std::size_t count, const u32* test_vector, u32* out,
                                          int threads, std::size_t batch) const {
  require(batch >= 1 && batch <= kMaxRotationBatch, "tfhe.bootstrap",
          "ciphertexts per rotation batch must lie in [1, " + std::to_string(kMaxRotationBatch) + "], got " +
              std::to_string(batch));
  check_test_vector(test_vector);
  const std::size_t width = params_.lwe_dimension + 1, N = params_.ring_dimension;
  const std::size_t parts = std::min<std::size_t>(count, threads > 0 ? threads : num_threads());
  auto body = [&](std::size_t begin, std::size_t end) {
    CacheAlignedVector<u32> accs(batch * 2 * N);
    rotate_and_extract(in + begin * width, end - begin, test_vector, 1, batch, accs.data(), out + begin * (N + 1));
  };
  parallel_ranges(count, parts, body);
}

}  // namespace ringfire::tfhe
