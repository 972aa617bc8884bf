// FHEW/TFHE core: the 32-bit NTT on every instruction set against the scalar
// reference and a schoolbook product, gates through a bootstrap on a small
// set, and evaluation keys through serialization.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "ringfire/arith/primes.h"
#include "ringfire/io/checksum.h"
#include "ringfire/io/serialize_tfhe.h"
#include "ringfire/tfhe/bootstrapper.h"

namespace ringfire::tfhe {
namespace {

std::vector<Isa> instruction_sets() {
  std::vector<Isa> out{Isa::scalar};
  if (best_isa() != Isa::scalar) out.push_back(Isa::avx2);
  if (best_isa() == Isa::avx512) out.push_back(Isa::avx512);
  return out;
}

TEST(TfheNtt32, EveryPathMatchesTheScalarReference) {
  for (std::size_t n : {64, 128, 1024, 2048})
    for (Isa isa : instruction_sets()) {
      const u32 q = static_cast<u32>(find_ntt_primes(27, 1, n)[0]);
      const Ntt32 ntt(n, q, isa);
      std::vector<u32> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<u32>((i * 104729 + 17) % q);
      std::vector<u32> f = a, ref = a;
      ntt.forward(f.data());
      ntt.forward_scalar(ref.data());
      ASSERT_EQ(f, ref) << isa_name(isa) << " n=" << n;
      ntt.inverse(f.data());
      ASSERT_EQ(f, a) << isa_name(isa) << " n=" << n;
    }
}

// Every size (odd and even stage counts, so the radix-4 loops end both ways)
// and every path: forward and inverse against the scalar reference on random
// words, the inverse also adding into an accumulator.
TEST(TfheNtt32, EveryPathMatchesTheScalarReferenceAtEverySize) {
  std::mt19937 rng(7);
  for (std::size_t n = 64; n <= 8192; n *= 2)
    for (Isa isa : instruction_sets()) {
      const u32 q = static_cast<u32>(find_ntt_primes(28, 1, n)[0]);
      const Ntt32 ntt(n, q, isa);
      std::uniform_int_distribution<u32> word(0, q - 1);
      std::vector<u32> a(n), acc(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = word(rng), acc[i] = word(rng);
      std::vector<u32> f = a, ref = a;
      ntt.forward(f.data());
      ntt.forward_scalar(ref.data());
      ASSERT_EQ(f, ref) << isa_name(isa) << " forward n=" << n;
      f = a, ref = a;
      ntt.inverse(f.data());
      ntt.inverse_scalar(ref.data());
      ASSERT_EQ(f, ref) << isa_name(isa) << " inverse n=" << n;
      std::vector<u32> into = acc, into_ref = acc;
      f = a, ref = a;
      ntt.inverse(f.data(), into.data());
      ntt.inverse_scalar(ref.data(), into_ref.data());
      ASSERT_EQ(into, into_ref) << isa_name(isa) << " inverse-accumulate n=" << n;
    }
}

TEST(TfheNtt32, VectorPathMatchesScalarAndMultipliesNegacyclically) {
  for (std::size_t n : {64, 256, 1024}) {
    const u32 q = static_cast<u32>(find_ntt_primes(27, 1, n)[0]);
    const Ntt32 ntt(n, q);
    std::vector<u32> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<u32>((i * 7919 + 3) % q), b[i] = static_cast<u32>((i * i + 11) % q);
    std::vector<u32> fa = a, fa_ref = a, fb = b;
    ntt.forward(fa.data());
    ntt.forward_scalar(fa_ref.data());
    ntt.forward(fb.data());
    EXPECT_EQ(fa, fa_ref);
    std::vector<u32> prod(n);
    for (std::size_t i = 0; i < n; ++i) prod[i] = static_cast<u32>(std::uint64_t{fa[i]} * fb[i] % q);
    ntt.inverse(prod.data());
    for (std::size_t k = 0; k < n; ++k) {
      std::int64_t want = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = (k + n - i) % n;
        const std::int64_t term = static_cast<std::int64_t>(std::uint64_t{a[i]} * b[j] % q);
        want = (want + (i <= k ? term : q - term)) % q;
      }
      ASSERT_EQ(prod[k], static_cast<u32>(want)) << "n=" << n << " k=" << k;
    }
  }
}

Params small_params() {
  Params p;
  p.lwe_dimension = 32, p.ring_dimension = 256, p.ring_modulus = static_cast<u32>(find_ntt_primes(27, 1, 256)[0]);
  p.gadget_base_log = 7, p.gadget_digits = 3, p.gadget_skip_bits = 6;
  p.ks_modulus = 1u << 14, p.ks_base_log = 7, p.ks_digits = 2;
  return p;
}

// A key switch above 2^16 (32-bit table words) whose top digit is partial.
Params wide_key_switch_params() {
  Params p = small_params();
  p.ks_modulus = 1u << 17, p.ks_base_log = 3, p.ks_digits = 6;
  return p;
}

// LMKCDEY's blind rotation (automorphism_key.h), a window of 3.
Params lmkcdey_params() {
  Params p = small_params();
  p.automorphism_window = 3;
  return p;
}

enum class Variant { narrow, wide, lmkcdey };

class TfheBootstrap : public ::testing::TestWithParam<Variant> {};

TEST_P(TfheBootstrap, GatesAndKeysThroughSerialization) {
  const Params p = GetParam() == Variant::wide      ? wide_key_switch_params()
                   : GetParam() == Variant::lmkcdey ? lmkcdey_params()
                                                    : small_params();
  Prng prng = Prng::from_seed(Prng::Seed{3});
  const SecretKey sk(p, prng);
  const Bootstrapper boot(sk, prng);
  const u32 q = p.lwe_modulus();
  // AND of two bits (1 -> q/8, 0 -> -q/8): x + y - q/8, then the sign test vector.
  std::vector<u32> mu = {q / 8, q - q / 8}, cts(2 * (p.lwe_dimension + 1));
  sk.encrypt(mu.data(), 2, cts.data(), prng);
  const std::vector<u32> tv(p.ring_dimension, p.ring_modulus / 8);
  const io::Bytes saved = io::save(boot);
  const auto loaded = io::load_tfhe_evaluation_keys(p, saved.data(), saved.size());
  // The same keys on every kernel path give the same bits.
  std::vector<std::unique_ptr<Bootstrapper>> paths;
  for (Isa isa : instruction_sets()) paths.push_back(io::load_tfhe_evaluation_keys(p, saved.data(), saved.size(), isa));
  for (int x = 0; x < 2; ++x)
    for (int y = 0; y < 2; ++y) {
      std::vector<u32> in(p.lwe_dimension + 1), out(p.lwe_dimension + 1), out2(p.lwe_dimension + 1);
      const u32* cx = cts.data() + (x ? 0 : 1) * (p.lwe_dimension + 1);
      const u32* cy = cts.data() + (y ? 0 : 1) * (p.lwe_dimension + 1);
      for (std::size_t i = 0; i <= p.lwe_dimension; ++i) in[i] = (cx[i] + cy[i]) % q;
      in[p.lwe_dimension] = (in[p.lwe_dimension] + q - q / 8) % q;
      boot.bootstrap(in.data(), tv.data(), out.data());
      loaded->bootstrap(in.data(), tv.data(), out2.data());
      EXPECT_EQ(out, out2);
      for (const auto& other : paths) {
        other->bootstrap(in.data(), tv.data(), out2.data());
        EXPECT_EQ(out, out2) << isa_name(other->isa());
      }
      u32 phase;
      sk.phases(out.data(), 1, &phase);
      EXPECT_EQ(phase < q / 2, x && y) << x << y;
    }
}

INSTANTIATE_TEST_SUITE_P(Sets, TfheBootstrap, ::testing::Values(Variant::narrow, Variant::wide, Variant::lmkcdey),
                         [](const auto& info) {
                           return info.param == Variant::wide ? "wide" : info.param == Variant::lmkcdey ? "lmkcdey"
                                                                                                         : "narrow";
                         });

// LMKCDEY rotates by exactly b - sum_i odd(a_i) s_i (even a_i made odd, odd_exponents), or
// by b - sum_i a_i s_i itself when exact, and as GINX does where every a_i is odd: with a
// constant test vector c, coefficient k of X^-phase TV is +c or -c as k + phase mod 2N falls
// below N or not, which decrypts exactly (the error is far below c), for every coefficient,
// window and instruction set.
TEST(TfheLmkcdey, RotatesByThePhaseWithEvenCoefficientsMadeOdd) {
  for (unsigned window : {1u, 3u, 10u}) {
    Params p = small_params();
    p.automorphism_window = window;
    Prng prng = Prng::from_seed(Prng::Seed{static_cast<std::uint8_t>(window)});
    const SecretKey sk(p, prng);
    const Params ginx_params = small_params();
    const SecretKey ginx_sk(ginx_params, sk.lwe(), sk.ring());
    const Bootstrapper ginx(ginx_sk, prng);
    const io::Bytes saved = io::save(Bootstrapper(sk, prng));  // one key on every path
    std::vector<std::unique_ptr<Bootstrapper>> paths;
    for (Isa isa : instruction_sets()) paths.push_back(io::load_tfhe_evaluation_keys(p, saved.data(), saved.size(), isa));
    const std::size_t n = p.lwe_dimension, N = p.ring_dimension;
    const u32 q = p.lwe_modulus(), Q = p.ring_modulus, c = Q / 4;
    const std::vector<u32> tv(N, c);
    std::mt19937 rng(window);
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<u32> in(n + 1);
      for (auto& x : in) x = rng() % q;
      if (trial == 0) std::fill(in.begin(), in.end() - 1, 1u);  // one class only
      if (trial == 1) std::fill(in.begin(), in.end() - 1, q - 1);  // -1: the class of -5^0
      if (trial == 2) for (auto& x : in) x |= 1;  // all odd: GINX's rotation too
      if (trial == 3) for (auto& x : in) x &= ~1u;  // all even: both neighbours used
      std::vector<u32> odd(n), acc(2 * N), ring(N);
      odd_exponents(in.data(), n, q, odd.data());
      for (bool exact : {false, true}) {
        std::int64_t phase = in[n];
        for (std::size_t i = 0; i < n; ++i) phase -= static_cast<std::int64_t>(exact ? in[i] : odd[i]) * sk.lwe()[i];
        phase = ((phase % q) + q) % q;
        std::vector<u32> first;
        for (const auto& boot : paths) {
          boot->blind_rotate(in.data(), tv.data(), acc.data(), exact);
          sk.ring_phases(acc.data(), ring.data());
          for (std::size_t k = 0; k < N; ++k) {
            const bool positive = (k + static_cast<std::size_t>(phase)) % q < N;
            const bool near_plus = ring[k] > c / 2 && ring[k] < Q / 2;
            ASSERT_EQ(near_plus, positive) << "window " << window << " trial " << trial << " exact " << exact
                                           << " coefficient " << k;
          }
          if (first.empty()) first = acc;
          EXPECT_EQ(acc, first) << isa_name(boot->isa());  // every path gives the same bits
        }
      }
      if (trial == 2) {
        std::vector<u32> ginx_acc(2 * N), ginx_ring(N);
        ginx.blind_rotate(in.data(), tv.data(), ginx_acc.data());
        ginx_sk.ring_phases(ginx_acc.data(), ginx_ring.data());
        for (std::size_t k = 0; k < N; ++k) ASSERT_EQ(ginx_ring[k] < Q / 2, ring[k] < Q / 2) << k;
      }
    }
  }
}

// Even exponents move to a neighbour, up or down by the ciphertext's hash: both ways
// within one all-even ciphertext (as after a product by 2), and differently for another.
TEST(TfheLmkcdey, EvenExponentsMoveBothWaysByTheCiphertextsHash) {
  const std::size_t n = 256;
  const u32 q = 2048;
  std::mt19937 rng(3);
  std::vector<u32> in(n + 1), out(n), other(n);
  for (auto& x : in) x = 2 * (rng() % (q / 2));  // all even
  odd_exponents(in.data(), n, q, out.data());
  std::size_t up = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i] % 2, 1u);
    ASSERT_TRUE(out[i] == (in[i] + 1) % q || out[i] == (in[i] + q - 1) % q) << i;
    up += out[i] == (in[i] + 1) % q;
  }
  EXPECT_GT(up, n / 4);
  EXPECT_LT(up, 3 * n / 4);
  in[n] += 2;  // another ciphertext with the same a: other signs
  odd_exponents(in.data(), n, q, other.data());
  EXPECT_NE(out, other);
  in[0] = 7;  // odd exponents stay
  odd_exponents(in.data(), n, q, out.data());
  EXPECT_EQ(out[0], 7u);
}

// LMKCDEY's key: one RGSW encryption per LWE coefficient and w + 1 automorphism keys,
// about half of GINX's two per coefficient; a GINX key does not load for LMKCDEY parameters.
TEST(TfheLmkcdey, HalvesTheBlindRotationKeyAndKeepsItsParametersApart) {
  Prng prng = Prng::from_seed(Prng::Seed{9});
  const Params ginx_params = small_params(), lmk_params = lmkcdey_params();
  const SecretKey sk(lmk_params, prng);
  const Bootstrapper lmk(sk, prng);
  const Bootstrapper ginx(SecretKey(ginx_params, sk.lwe(), sk.ring()), prng);
  const std::size_t n = lmk_params.lwe_dimension, N = lmk_params.ring_dimension, dg = lmk_params.gadget_digits;
  EXPECT_EQ(lmk.bootstrap_key_bytes(), (n * 2 * dg + 4 * dg) * N * 2 * 4);
  EXPECT_EQ(ginx.bootstrap_key_bytes(), n * 2 * 2 * dg * N * 2 * 4);
  EXPECT_NE(lmk_params.identity(), ginx_params.identity());
  const io::Bytes saved = io::save(ginx);
  EXPECT_THROW(io::load_tfhe_evaluation_keys(lmk_params, saved.data(), saved.size()), InvalidArgument);
  Params bad = small_params();
  bad.automorphism_window = static_cast<unsigned>(N / 2);
  EXPECT_THROW(bad.validate(), InvalidArgument);
}

// Many outputs of one blind rotation: output k decrypts to TV[phase + k]
// (negacyclic), within the bootstrap's error, and output 0 is bootstrap()'s.
TEST(TfheManyLut, SeveralOutputsReadConsecutiveTestVectorCoefficients) {
  const Params p = small_params();
  Prng prng = Prng::from_seed(Prng::Seed{5});
  const SecretKey sk(p, prng);
  const Bootstrapper boot(sk, prng);
  const std::size_t N = p.ring_dimension, n = p.lwe_dimension, outputs = 4;
  const u32 q = p.lwe_modulus(), Q = p.ring_modulus;
  // TV[j] = (j mod 4) Q / 8 in the first half: outputs k = 0..3 of a phase
  // that is a multiple of 4 read k Q / 8, i.e. phase k q / 8 after switching.
  std::vector<u32> tv(N);
  for (std::size_t j = 0; j < N; ++j) tv[j] = static_cast<u32>((j % 4) * (Q / 8));
  for (u32 mu : {u32{16}, u32{40}, u32{200}}) {  // well inside [0, N): no negacyclic wrap
    std::vector<u32> ct(n + 1), out(outputs * (n + 1)), one(n + 1);
    sk.encrypt(&mu, 1, ct.data(), prng);
    boot.bootstrap_many(ct.data(), 1, tv.data(), out.data(), 1, outputs);
    boot.bootstrap(ct.data(), tv.data(), one.data());
    EXPECT_EQ(std::vector<u32>(out.begin(), out.begin() + n + 1), one);
    u32 phase0;
    sk.phases(ct.data(), 1, &phase0);
    for (std::size_t k = 0; k < outputs; ++k) {
      u32 phase;
      sk.phases(out.data() + k * (n + 1), 1, &phase);
      // The input's own error moves the rotation by a few steps: the output
      // reads TV at phase(in) + k, whose residue mod 4 says which value.
      const std::size_t at = (phase0 + k) % 4;
      const long long want = static_cast<long long>(at * q / 8);
      long long diff = static_cast<long long>(phase) - want;
      diff = ((diff % q) + q + q / 2) % q - q / 2;
      EXPECT_LT(std::llabs(diff), static_cast<long long>(q / 16)) << "mu=" << mu << " k=" << k;
    }
  }
  std::vector<u32> ct(n + 1), out(n + 1);
  EXPECT_THROW(boot.bootstrap_many(ct.data(), 1, tv.data(), out.data(), 1, 0), InvalidArgument);
  EXPECT_THROW(boot.bootstrap_many(ct.data(), 1, tv.data(), out.data(), 1, N + 1), InvalidArgument);
}

// An LWE ciphertext of dimension N under the ring secret z at Q, as another
// scheme leaves it after switching to the FHEW ring, ends as a gate ciphertext
// with the same phase scaled to q (the bootstrap's last steps).
TEST(TfheSwitchRingLwe, FinishesAnLweCiphertextUnderTheRingSecret) {
  const Params p = small_params();
  Prng prng = Prng::from_seed(Prng::Seed{9});
  const SecretKey sk(p, prng);
  const Bootstrapper boot(sk, prng);
  const std::size_t N = p.ring_dimension, n = p.lwe_dimension;
  const u32 q = p.lwe_modulus(), Q = p.ring_modulus;
  for (u32 mu : {u32{0}, u32{1}, u32{3}, u32{6}}) {
    std::vector<u32> in(N + 1), out(n + 1);
    std::uint64_t inner = 0;
    for (std::size_t j = 0; j < N; ++j) {
      in[j] = static_cast<u32>(prng.uniform_below(Q));
      const std::int8_t z = sk.ring()[j];
      inner += z == 0 ? 0 : (z > 0 ? in[j] : Q - in[j]);
    }
    in[N] = static_cast<u32>((inner + std::uint64_t{mu} * (Q / 8) + 3) % Q);  // phase b - <a, z> = mu Q/8 + 3
    boot.switch_ring_lwe(in.data(), 1, out.data());
    u32 phase;
    sk.phases(out.data(), 1, &phase);
    long long diff = static_cast<long long>(phase) - static_cast<long long>(mu * q / 8);
    diff = ((diff % q) + q + q / 2) % q - q / 2;
    EXPECT_LT(std::llabs(diff), static_cast<long long>(q / 16)) << "mu=" << mu;
  }
  std::vector<u32> bad(N + 1, Q), out(n + 1);
  EXPECT_THROW(boot.switch_ring_lwe(bad.data(), 1, out.data()), InvalidArgument);
}

// The key switch of many ciphertexts at once (each table row read once per batch) gives the
// words of one at a time, across batch edges, on both table widths; so do bootstrap_many
// (key switches together) and switch_ring_lwe against one by one.
class TfheBatchedKeySwitch : public ::testing::TestWithParam<bool> {};

TEST_P(TfheBatchedKeySwitch, MatchesOneAtATime) {
  const Params p = GetParam() ? wide_key_switch_params() : small_params();
  Prng prng = Prng::from_seed(Prng::Seed{13});
  const SecretKey sk(p, prng);
  const Bootstrapper boot(sk, prng);
  const std::size_t N = p.ring_dimension, n = p.lwe_dimension;
  const std::size_t count = 2 * Bootstrapper::kSwitchBatch + KeySwitchKey::kBatchLimit + 3;
  std::vector<u32> in(count * (N + 1));
  for (auto& w : in) w = static_cast<u32>(prng.uniform_below(p.ks_modulus));
  std::vector<u32> many(count * (n + 1)), one(n + 1);
  boot.key_switch_key().apply_many(in.data(), count, many.data());
  for (std::size_t c = 0; c < count; ++c) {
    boot.key_switch_key().apply(in.data() + c * (N + 1), one.data());
    ASSERT_EQ(std::vector<u32>(many.begin() + c * (n + 1), many.begin() + (c + 1) * (n + 1)), one) << c;
  }
  // Whole bootstraps: a batch of fresh ciphertexts through bootstrap_many on two threads and one.
  const u32 q = p.lwe_modulus();
  std::vector<u32> mu(count), cts(count * (n + 1)), outs(count * (n + 1)), outs1(count * (n + 1));
  for (std::size_t c = 0; c < count; ++c) mu[c] = static_cast<u32>((c % 8) * q / 8);
  sk.encrypt(mu.data(), count, cts.data(), prng);
  const std::vector<u32> tv(N, p.ring_modulus / 8);
  boot.bootstrap_many(cts.data(), count, tv.data(), outs.data(), 2);
  boot.bootstrap_many(cts.data(), count, tv.data(), outs1.data(), 1);
  EXPECT_EQ(outs, outs1);
  for (std::size_t c = 0; c < count; c += 37) {
    boot.bootstrap(cts.data() + c * (n + 1), tv.data(), one.data());
    EXPECT_EQ(std::vector<u32>(outs.begin() + c * (n + 1), outs.begin() + (c + 1) * (n + 1)), one) << c;
  }
  // Ring LWE ciphertexts (words below Q) through switch_ring_lwe, batched against one by one.
  for (auto& w : in) w = static_cast<u32>(prng.uniform_below(p.ring_modulus));
  boot.switch_ring_lwe(in.data(), count, many.data());
  for (std::size_t c = 0; c < count; c += 29) {
    boot.switch_ring_lwe(in.data() + c * (N + 1), 1, one.data());
    EXPECT_EQ(std::vector<u32>(many.begin() + c * (n + 1), many.begin() + (c + 1) * (n + 1)), one) << c;
  }
}

INSTANTIATE_TEST_SUITE_P(KeySwitchWords, TfheBatchedKeySwitch, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "wide" : "narrow"; });

// Blind rotations that step through the key together (bootstrap_many's batch) give the bits of
// one at a time: for every batch size, counts that leave a partial batch, ciphertexts whose
// coefficients are zero where others' are not (skipped steps), many-LUT outputs, on every
// instruction set, GINX and LMKCDEY (which rotates one at a time whatever the batch).
TEST(TfheRotationBatch, EveryBatchGivesTheBitsOfOneAtATime) {
  for (const Params& p : {small_params(), lmkcdey_params()}) {
    Prng prng = Prng::from_seed(Prng::Seed{21});
    const SecretKey sk(p, prng);
    const io::Bytes saved = io::save(Bootstrapper(sk, prng));
    const std::size_t N = p.ring_dimension, n = p.lwe_dimension, count = 11, width = n + 1;
    const u32 q = p.lwe_modulus();
    std::vector<u32> mu(count), cts(count * width);
    for (std::size_t c = 0; c < count; ++c) mu[c] = static_cast<u32>((c % 8) * q / 8);
    sk.encrypt(mu.data(), count, cts.data(), prng);
    for (std::size_t c = 0; c < count; c += 2)  // a run of zero coefficients in every other ciphertext
      std::fill(cts.begin() + c * width + 2 * c, cts.begin() + c * width + 2 * c + 9, 0u);  // below n
    for (std::size_t c = 0; c < count; ++c)  // steps no accumulator takes: one inside, and the last
      cts[c * width + n / 2] = cts[c * width + n - 1] = 0;
    std::vector<u32> tv(N);
    for (std::size_t j = 0; j < N; ++j) tv[j] = static_cast<u32>((j % 4) * (p.ring_modulus / 8));
    for (Isa isa : instruction_sets()) {
      const auto boot = io::load_tfhe_evaluation_keys(p, saved.data(), saved.size(), isa);
      for (std::size_t outputs : {std::size_t{1}, std::size_t{2}}) {
        std::vector<u32> want(count * outputs * width), got(want.size()), one(outputs * width);
        for (std::size_t c = 0; c < count; ++c) {
          boot->bootstrap_many(cts.data() + c * width, 1, tv.data(), one.data(), 1, outputs, 1);
          std::copy(one.begin(), one.end(), want.begin() + c * outputs * width);
        }
        const std::vector<std::size_t> batches =  // LMKCDEY takes one at a time whatever the batch
            p.automorphism_window ? std::vector<std::size_t>{8} : std::vector<std::size_t>{3, 8, 16};
        for (std::size_t batch : batches) {
          boot->bootstrap_many(cts.data(), count, tv.data(), got.data(), 1 + batch % 2, outputs, batch);
          EXPECT_EQ(got, want) << "batch " << batch << ", outputs " << outputs << ", isa " << isa_name(isa)
                               << (p.automorphism_window ? ", LMKCDEY" : ", GINX");
        }
      }
      std::vector<u32> out(width);
      EXPECT_THROW(boot->bootstrap_many(cts.data(), 1, tv.data(), out.data(), 1, 1, 0), InvalidArgument);
      EXPECT_THROW(boot->bootstrap_many(cts.data(), 1, tv.data(), out.data(), 1, 1,
                                        Bootstrapper::kMaxRotationBatch + 1),
                   InvalidArgument);
    }
  }
}

TEST(TfheParams, KeySwitchDigitsMustCoverWithoutSpare) {
  Params p = wide_key_switch_params();
  EXPECT_NO_THROW(p.validate());
  p.ks_digits = 7;  // 21 bits for 17: a digit to spare
  EXPECT_THROW(p.validate(), InvalidArgument);
  p.ks_digits = 5;  // 15 bits: too few
  EXPECT_THROW(p.validate(), InvalidArgument);
}

TEST(TfheSerialize, RefusesOtherParametersAndBadWords) {
  const Params p = small_params();
  Params other = p;
  other.sigma = 3.2;
  io::TfheCiphertexts cts{0, 0, {1}, std::vector<u32>(p.lwe_dimension + 1, 0)};
  const io::Bytes bytes = io::save(p, cts);
  EXPECT_THROW(io::load_tfhe_ciphertexts(other, bytes.data(), bytes.size()), InvalidArgument);
  EXPECT_NO_THROW(io::load_tfhe_ciphertexts(p, bytes.data(), bytes.size()));
  // A word at q: the saver refuses it, and so does the loader when it is written in anyway.
  io::TfheCiphertexts bad_cts = cts;
  bad_cts.words[0] = p.lwe_modulus();
  EXPECT_THROW(io::save(p, bad_cts), InvalidArgument);
  io::Bytes bad = bytes;
  const std::size_t first_word = 48 + 3 + 8 + 8;  // header, encoding/bits/ndim, one dimension, count
  bad[first_word] = static_cast<std::uint8_t>(p.lwe_modulus() & 0xFF);
  bad[first_word + 1] = static_cast<std::uint8_t>(p.lwe_modulus() >> 8);
  const std::uint64_t sum = io::checksum64(bad.data(), bad.size() - 8);
  for (int i = 0; i < 8; ++i) bad[bad.size() - 8 + i] = static_cast<std::uint8_t>(sum >> (8 * i));
  EXPECT_THROW(io::load_tfhe_ciphertexts(p, bad.data(), bad.size()), InvalidArgument);
}

}  // namespace
}  // namespace ringfire::tfhe
