// The 64-bit torus engine: the negacyclic FFT against schoolbook products,
// exact products by a binary key, the key switch, and every message of a
// lookup table through a bootstrap on a small set, one bit per step and
// multi-bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ringfire/tfhe/torus_bootstrapper.h"

namespace ringfire::tfhe {
namespace {

using u64 = std::uint64_t;

std::vector<u64> schoolbook(const std::vector<u64>& a, const std::vector<u64>& b) {
  const std::size_t N = a.size();
  std::vector<u64> out(N, 0);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      const u64 p = a[i] * b[j];
      if (i + j < N) out[i + j] += p;
      else out[i + j - N] -= p;
    }
  return out;
}

TorusParams toy() {
  TorusParams p;
  p.lwe_dimension = 32;
  p.ring_dimension = 256;
  p.pbs_base_log = 15;
  p.pbs_levels = 2;
  p.ks_base_log = 4;
  p.ks_levels = 5;
  p.lwe_noise_log2 = 30;
  p.glwe_noise_log2 = 20;
  return p;
}

TEST(TorusFft, NegacyclicProductsMatchTheSchoolbook) {
  std::mt19937_64 rng(7);
  // Every pass kind (radix 2, 2^2, the groups of 16), with the twist fused into
  // a first radix-2 pass (256, 1024, 4096) or radix-2^2 pass (2048), and on
  // its own before radix-2 passes only (4 .. 32).
  for (std::size_t N : {4, 16, 32, 256, 1024, 2048, 4096}) {
    const NegacyclicFft fft(N);
    const std::size_t M = N / 2;
    // Digits below 2^12 times words below 2^24, N terms: below 2^47, exact
    // in a double after rounding.
    std::vector<std::int64_t> a(N), b(N);
    for (auto& v : a) v = static_cast<std::int64_t>(rng() % (1u << 13)) - (1 << 12);
    for (auto& v : b) v = static_cast<std::int64_t>(rng() % (1u << 25)) - (1 << 24);
    std::vector<double> ar(M), ai(M), br(M), bi(M), sr(M, 0.0), si(M, 0.0);
    fft.forward(a.data(), ar.data(), ai.data());
    fft.forward(b.data(), br.data(), bi.data());
    multiply_accumulate(ar.data(), ai.data(), br.data(), bi.data(), sr.data(), si.data(), M);
    std::vector<u64> got(N, 0);
    fft.backward_add(sr.data(), si.data(), got.data());
    std::vector<u64> ua(a.begin(), a.end()), ub(b.begin(), b.end());
    EXPECT_EQ(got, schoolbook(ua, ub)) << "N=" << N;
  }
}

// One gadget level's digits, the reference way: the top B bits of w, rounded,
// as a signed integer in [-2^(B-1), 2^(B-1)).
std::int32_t top_digit(u64 w, unsigned B) {
  const unsigned s = 64 - B;
  const u64 rounded = (w >> s) + ((w >> (s - 1)) & 1);  // up to 2^B
  const u64 d = rounded & ((u64{1} << B) - 1);
  return static_cast<std::int32_t>(static_cast<std::int64_t>(d) - (d >= (u64{1} << (B - 1)) ? (std::int64_t{1} << B) : 0));
}

TEST(TorusFft, TopDigitsTransformAsTheDigitsThemselves) {
  std::mt19937_64 rng(5);
  // Every form the CPU runs: four lanes (and one, below four points' passes)
  // and, where it has AVX-512, eight.
  std::vector<Isa> isas{Isa::avx2};
  if (best_isa() == Isa::avx512) isas.push_back(Isa::avx512);
  for (Isa isa : isas)
  for (std::size_t N : {16, 256, 1024, 2048}) {
    const NegacyclicFft fft(N, isa);
    const std::size_t M = N / 2;
    for (unsigned B : {1u, 2u, 12u, 23u, 30u}) {
      std::vector<u64> words(N);
      for (auto& w : words) w = rng();
      // The edges: 0, all ones (rounds up past the top: digit 0), the rounding
      // boundary itself and either side of it, the sign boundary.
      const u64 half_ulp = u64{1} << (63 - B);
      const u64 edges[] = {0, ~u64{0}, half_ulp, half_ulp - 1, half_ulp + 1, u64{1} << 63, (u64{1} << 63) - half_ulp,
                           (u64{1} << 63) - half_ulp - 1};
      for (std::size_t j = 0; j < std::size(edges); ++j) words[(3 * j) % N] = edges[j];
      std::vector<std::int32_t> digits(N);
      for (std::size_t j = 0; j < N; ++j) digits[j] = top_digit(words[j], B);
      std::vector<double> want_re(M), want_im(M), got_re(M), got_im(M);
      fft.forward(digits.data(), want_re.data(), want_im.data());
      fft.forward_top_digits(words.data(), B, got_re.data(), got_im.data());
      // The same doubles in the same order: equal to the bit.
      EXPECT_EQ(got_re, want_re) << "N=" << N << " B=" << B << " wide=" << fft.wide();
      EXPECT_EQ(got_im, want_im) << "N=" << N << " B=" << B << " wide=" << fft.wide();
    }
  }
  const NegacyclicFft fft(16);
  std::vector<u64> words(16, 0);
  std::vector<double> re(8), im(8);
  EXPECT_THROW(fft.forward_top_digits(words.data(), 0, re.data(), im.data()), std::exception);
  EXPECT_THROW(fft.forward_top_digits(words.data(), 31, re.data(), im.data()), std::exception);
}

TEST(TorusFft, ValuesFarAboveTwoToThe64WrapAroundIt) {
  // c 2^k X^j for k up to 90 (the blind rotation's sums reach 2^90): the
  // inverse must come back as c 2^k mod 2^64, up to the transform's relative
  // rounding (2^-40 of the value allowed; it is near 2^-52).
  for (std::size_t N : {256, 2048}) {
    const NegacyclicFft fft(N);
    const std::size_t M = N / 2;
    for (int k : {40, 62, 63, 64, 70, 80, 90}) {
      for (std::int64_t c : {std::int64_t{1}, std::int64_t{-3}, std::int64_t{12345}}) {
        const std::size_t j = 7;
        std::vector<std::int64_t> x(N, 0);
        x[j] = 1;
        std::vector<double> re(M), im(M);
        fft.forward(x.data(), re.data(), im.data());
        const double scale = std::ldexp(static_cast<double>(c), k);
        for (std::size_t t = 0; t < M; ++t) re[t] *= scale, im[t] *= scale;
        std::vector<u64> got(N, 0);
        fft.backward_add(re.data(), im.data(), got.data());
        // c 2^k mod 2^64, computed exactly.
        const u64 want = k >= 64 ? 0 : static_cast<u64>(c) << k;
        const double slack = std::fabs(scale) * 0x1p-40;
        const auto off = static_cast<double>(static_cast<std::int64_t>(got[j] - want));
        EXPECT_LE(std::fabs(off), slack) << "N=" << N << " k=" << k << " c=" << c;
        for (std::size_t t = 0; t < N; ++t)
          if (t != j) {
            ASSERT_LE(std::fabs(static_cast<double>(static_cast<std::int64_t>(got[t]))), slack) << "t=" << t;
          }
      }
    }
  }
}

TEST(TorusFft, MonomialsFromTheTableOfRootsMatchTheirTransforms) {
  for (std::size_t N : {4, 16, 32, 64, 256, 2048, 4096}) {
    const NegacyclicFft fft(N);
    const std::size_t M = N / 2;
    // Every set's N (>= 64): blocks of four points are shifts of the first
    // (the multi-bit rotation's one lookup per block).
    if (N >= 64) {
      EXPECT_TRUE(fft.shifted_blocks()) << "N=" << N;
    }
    std::vector<double> re(M), im(M);
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{3}, N / 2 - 1, N / 2, N - 1, N, N + 1,
                          2 * N - 1}) {
      // X^m: for m >= N, -X^(m - N).
      std::vector<std::int64_t> x(N, 0);
      x[m % N] = m < N ? 1 : -1;
      fft.forward(x.data(), re.data(), im.data());
      for (std::size_t k = 0; k < M; ++k) {
        const std::size_t at = (static_cast<std::size_t>(fft.exponents()[k]) * m) % (2 * N);
        ASSERT_NEAR(fft.roots_re()[at], re[k], 1e-12) << "N=" << N << " m=" << m << " k=" << k;
        ASSERT_NEAR(fft.roots_im()[at], im[k], 1e-12) << "N=" << N << " m=" << m << " k=" << k;
      }
    }
  }
}

TEST(TorusFft, ProductsByABinaryKeyAreExactModTwoToThe64) {
  std::mt19937_64 rng(11);
  const std::size_t N = 1024;
  const NegacyclicFft fft(N);
  std::vector<u64> a(N), z(N);
  for (auto& v : a) v = rng();
  for (auto& v : z) v = rng() & 1;
  std::vector<std::int64_t> zi(z.begin(), z.end());
  std::vector<double> zr(N / 2), zim(N / 2);
  fft.forward(zi.data(), zr.data(), zim.data());
  std::vector<u64> got(N);
  multiply_by_binary(fft, a.data(), zr.data(), zim.data(), got.data());
  EXPECT_EQ(got, schoolbook(a, z));
}

// The AVX-512 transforms against the four-lane ones, to the bit: every N whose
// passes they fit (a first radix-2^2 pass fused with the twist), digits at the
// edges of the rounding and the sign, sums far above 2^64 on the way back.
// Skipped where the CPU has no AVX-512 (the CI machine may not).
TEST(TorusFft, WideTransformsGiveTheNarrowOnesBits) {
  if (best_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937_64 rng(13);
  for (std::size_t N : {128, 512, 2048}) {
    const NegacyclicFft narrow(N, Isa::avx2), wide(N, Isa::avx512);
    ASSERT_FALSE(narrow.wide());
    ASSERT_TRUE(wide.wide()) << "N=" << N;
    const std::size_t M = N / 2;
    std::vector<double> nr(M), ni(M), wr(M), wi(M);
    for (unsigned B : {1u, 7u, 23u, 30u}) {
      std::vector<u64> words(N);
      for (auto& w : words) w = rng();
      const u64 half_ulp = u64{1} << (63 - B);
      const u64 edges[] = {0, ~u64{0}, half_ulp, half_ulp - 1, u64{1} << 63, (u64{1} << 63) - half_ulp - 1};
      for (std::size_t j = 0; j < std::size(edges); ++j) words[(5 * j) % N] = edges[j];
      narrow.forward_top_digits(words.data(), B, nr.data(), ni.data());
      wide.forward_top_digits(words.data(), B, wr.data(), wi.data());
      ASSERT_EQ(nr, wr) << "N=" << N << " B=" << B;
      ASSERT_EQ(ni, wi) << "N=" << N << " B=" << B;
      std::vector<std::int32_t> digits(N);
      for (auto& d : digits) d = static_cast<std::int32_t>(rng() % (1u << B)) - (1 << (B - 1));
      narrow.forward(digits.data(), nr.data(), ni.data());
      wide.forward(digits.data(), wr.data(), wi.data());
      ASSERT_EQ(nr, wr) << "digits N=" << N << " B=" << B;
      ASSERT_EQ(ni, wi) << "digits N=" << N << " B=" << B;
    }
    // The way back from products of digits (2^22) and key words (2^63): sums
    // near 2^90 in the transform, wrapped mod 2^64; and from values of every
    // size up to 2^100, some at exact halves.
    for (int round = 0; round < 3; ++round) {
      std::vector<double> sr(M), si(M);
      for (std::size_t k = 0; k < M; ++k) {
        const int e = round == 2 ? static_cast<int>(rng() % 100) : 88;
        sr[k] = std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng())) * 0x1p-63, e);
        si[k] = std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng())) * 0x1p-63, e);
        if (round == 1 && k % 7 == 0) sr[k] = std::ldexp(static_cast<double>(rng() % 4096) + 0.5, 50);
      }
      std::vector<double> r1 = sr, i1 = si, r2 = sr, i2 = si;
      std::vector<u64> out_narrow(N), out_wide(N);
      for (std::size_t j = 0; j < N; ++j) out_narrow[j] = out_wide[j] = rng();
      narrow.backward_add(r1.data(), i1.data(), out_narrow.data());
      wide.backward_add(r2.data(), i2.data(), out_wide.data());
      ASSERT_EQ(out_narrow, out_wide) << "N=" << N << " round " << round;
    }
  }
  // Passes the eight lanes do not fit keep the narrow path.
  for (std::size_t N : {4, 64, 256, 1024, 4096}) EXPECT_FALSE(NegacyclicFft(N, Isa::avx512).wide()) << "N=" << N;
}

// The blind rotation's transforms fetch the lines they are handed (the next
// step's keys) a few at a time: per_slot lines at each of prefetch_slots()
// places per transform, on both paths, and the same bits as without.
TEST(TorusFft, TransformsFetchAheadAtEachOfTheirSlots) {
  std::mt19937_64 rng(17);
  std::vector<Isa> isas{Isa::avx2};
  if (best_isa() == Isa::avx512) isas.push_back(Isa::avx512);
  for (const Isa isa : isas) {
    for (std::size_t N : {128, 512, 1024, 2048, 4096}) {
      const NegacyclicFft fft(N, isa);
      const std::size_t slots = fft.prefetch_slots(), M = N / 2, per_slot = 3;
      if (N >= 1024) {
        EXPECT_GT(slots, 0u) << "N=" << N;
      }
      std::vector<char> keys((per_slot * slots + 5) * LinesAhead::kLine);
      LinesAhead ahead;
      const auto fetched = [&] { return (keys.size() - ahead.left()) / LinesAhead::kLine; };
      std::vector<u64> words(N);
      for (auto& w : words) w = rng();
      std::vector<double> r1(M), i1(M), r2(M), i2(M);
      fft.forward_top_digits(words.data(), 23, r1.data(), i1.data());
      ahead.start(keys.data(), keys.size(), per_slot);
      fft.forward_top_digits(words.data(), 23, r2.data(), i2.data(), &ahead);
      EXPECT_EQ(fetched(), per_slot * slots) << "N=" << N;
      ASSERT_EQ(r1, r2);
      ASSERT_EQ(i1, i2);
      std::vector<std::int32_t> digits(N);
      for (auto& d : digits) d = static_cast<std::int32_t>(rng() % 4096) - 2048;
      fft.forward(digits.data(), r1.data(), i1.data());
      ahead.start(keys.data(), keys.size(), per_slot);
      fft.forward(digits.data(), r2.data(), i2.data(), &ahead);
      EXPECT_EQ(fetched(), per_slot * slots) << "N=" << N;
      ASSERT_EQ(r1, r2);
      ASSERT_EQ(i1, i2);
      std::vector<u64> out1(N), out2(N);
      for (std::size_t j = 0; j < N; ++j) out1[j] = out2[j] = rng();
      ahead.start(keys.data(), keys.size(), per_slot);
      fft.backward_add(r1.data(), i1.data(), out1.data());
      fft.backward_add(r2.data(), i2.data(), out2.data(), &ahead);
      EXPECT_EQ(fetched(), per_slot * slots) << "N=" << N;
      ASSERT_EQ(out1, out2);
      // Never past the end it was given.
      ahead.start(keys.data(), 2 * LinesAhead::kLine, per_slot);
      fft.backward_add(r1.data(), i1.data(), out1.data(), &ahead);
      EXPECT_EQ(ahead.left(), 0u);
    }
  }
}

TEST(TorusKeys, TUniformStaysInItsBoundsWithItsVariance) {
  Prng prng = Prng::from_seed(Prng::Seed{1});
  const unsigned b = 6;
  double sum2 = 0;
  const int count = 200000;
  for (int i = 0; i < count; ++i) {
    const std::int64_t v = sample_tuniform(prng, b);
    ASSERT_LE(std::llabs(v), 1 << b);
    sum2 += static_cast<double>(v * v);
  }
  const double expected = (std::pow(2.0, 2 * b + 1) + 1) / 6;
  EXPECT_NEAR(sum2 / count, expected, expected * 0.02);
}

TEST(TorusBootstrap, KeySwitchKeepsThePhase) {
  Prng prng = Prng::from_seed(Prng::Seed{2});
  const TorusParams p = toy();
  const TorusSecretKey key(p, prng);
  const TorusBootstrapper boot(key, prng);
  const std::size_t N = p.ring_dimension, n = p.lwe_dimension;
  std::vector<u64> mu{u64{3} << 60}, ct(N + 1), small(n + 1), phase(1);
  std::vector<std::uint32_t> switched(n + 1);
  key.encrypt(mu.data(), 1, ct.data(), prng);
  boot.switch_input(ct.data(), switched.data(), small.data());
  key.small_phases(small.data(), 1, phase.data());
  const double error = static_cast<double>(static_cast<std::int64_t>(phase[0] - mu[0]));
  // The key switch rounds away 64 - 20 bits per coefficient: N/2 terms of at most 2^43.
  EXPECT_LT(std::fabs(error), std::ldexp(1.0, 43) * N / 2);
  EXPECT_LT(std::fabs(error), std::ldexp(1.0, 58));
}

// The key switch's table holds 24-bit words in blocks of four levels; its
// products run on sixteen lanes, eight or one, and give the same words, for
// level counts that fill the blocks (4) and that do not (2, 5), for the
// largest base the vector products take (2^7: digits up to 2^6, whose byte
// products summed in pairs come nearest to 16 bits), in batches.
TEST(TorusBootstrap, KeySwitchGivesTheSameWordsOnEveryIsa) {
  const Isa before = default_isa();
  std::vector<Isa> isas{Isa::scalar};
  if (best_isa() != Isa::scalar) isas.push_back(Isa::avx2);
  if (best_isa() == Isa::avx512) isas.push_back(Isa::avx512);
  for (auto [levels, base_log] : {std::pair{2u, 4u}, {4u, 4u}, {5u, 4u}, {4u, 7u}, {2u, 8u}}) {
    TorusParams p = toy();
    p.ks_levels = levels;
    p.ks_base_log = base_log;
    std::vector<std::vector<std::uint32_t>> outs;
    for (Isa isa : isas) {
      set_default_isa(isa);
      Prng prng = Prng::from_seed(Prng::Seed{7});
      const TorusSecretKey key(p, prng);
      const TorusKeySwitchKey ksk(key, prng);
      const std::size_t N = p.ring_dimension, n = p.lwe_dimension, count = 3;
      std::vector<u64> mu{u64{1} << 62, u64{5} << 60, 0}, cts(count * (N + 1)), small(count * (n + 1)), phases(count);
      key.encrypt(mu.data(), count, cts.data(), prng);
      std::vector<std::uint32_t> out(count * (n + 1));
      ksk.apply_many(cts.data(), count, out.data());
      outs.push_back(out);
      // And the phase under the small key is the message's, within the key switch's noise.
      for (std::size_t i = 0; i < count * (n + 1); ++i) small[i] = u64{out[i]} << 32;
      key.small_phases(small.data(), count, phases.data());
      for (std::size_t c = 0; c < count; ++c) {
        const double error = static_cast<double>(static_cast<std::int64_t>(phases[c] - mu[c]));
        EXPECT_LT(std::fabs(error), std::ldexp(1.0, 60)) << "levels " << levels << ", base 2^" << base_log << ", ciphertext " << c;
      }
    }
    set_default_isa(before);
    for (std::size_t i = 1; i < outs.size(); ++i)
      EXPECT_EQ(outs[i], outs[0]) << "levels " << levels << ", base 2^" << base_log << ", " << isa_name(isas[i])
                                  << " against scalar";
  }
}

TEST(TorusBootstrap, EveryMessageOfATableComesOutRight) {
  Prng prng = Prng::from_seed(Prng::Seed{3});
  const TorusParams p = toy();
  const TorusSecretKey key(p, prng);
  const TorusBootstrapper boot(key, prng);
  const std::size_t N = p.ring_dimension;
  const unsigned bits = 3;
  const u64 slots = u64{1} << bits, delta = u64{1} << (63 - bits);  // with a padding bit
  auto f = [&](u64 m) { return (m * m + 3) % slots; };
  std::vector<u64> tv(N);
  for (std::size_t j = 0; j < N; ++j) tv[j] = f(j * slots / N) * delta;
  std::vector<u64> mu(slots), cts(slots * (N + 1)), out(slots * (N + 1)), phases(slots);
  for (u64 m = 0; m < slots; ++m) mu[m] = m * delta + delta / 2;  // half a slot up
  key.encrypt(mu.data(), slots, cts.data(), prng);
  boot.bootstrap_many(cts.data(), slots, tv.data(), out.data(), 2);
  key.phases(out.data(), slots, phases.data());
  for (u64 m = 0; m < slots; ++m) {
    const u64 decoded = ((phases[m] + delta / 2) / delta) % (2 * slots);
    EXPECT_EQ(decoded, f(m)) << "m=" << m;
  }
}

TEST(TorusBootstrap, MultiBitGroupsGiveEveryMessageOfATable) {
  for (unsigned g : {2u, 3u, 4u}) {
    Prng prng = Prng::from_seed(Prng::Seed{static_cast<std::uint8_t>(30 + g)});
    TorusParams p = toy();
    p.lwe_dimension = 36;  // divisible by 2, 3 and 4
    p.grouping = g;
    const TorusSecretKey key(p, prng);
    const TorusBootstrapper boot(key, prng);
    const std::size_t N = p.ring_dimension;
    const unsigned bits = 3;
    const u64 slots = u64{1} << bits, delta = u64{1} << (63 - bits);
    auto f = [&](u64 m) { return (5 * m + 1) % slots; };
    std::vector<u64> tv(N);
    for (std::size_t j = 0; j < N; ++j) tv[j] = f(j * slots / N) * delta;
    const std::size_t reps = 4;  // several encryptions of each message: other masks, other patterns
    std::vector<u64> mu(slots * reps), cts(slots * reps * (N + 1)), out(slots * reps * (N + 1)), phases(slots * reps);
    for (std::size_t i = 0; i < mu.size(); ++i) mu[i] = (i % slots) * delta + delta / 2;
    key.encrypt(mu.data(), mu.size(), cts.data(), prng);
    boot.bootstrap_many(cts.data(), mu.size(), tv.data(), out.data(), 2);
    key.phases(out.data(), mu.size(), phases.data());
    for (std::size_t i = 0; i < mu.size(); ++i) {
      const u64 m = i % slots;
      // The output's error is small: the phase sits within 2^52 of its slot's value.
      const std::int64_t error = static_cast<std::int64_t>(phases[i] - f(m) * delta);
      EXPECT_LT(std::llabs(error), std::int64_t{1} << 52) << "g=" << g << " m=" << m;
      EXPECT_EQ(((phases[i] + delta / 2) / delta) % (2 * slots), f(m)) << "g=" << g << " m=" << m;
    }
  }
}

// A whole bootstrap (one bit per step and multi-bit) on a ring whose
// transforms run eight lanes wide gives the bits of the four-lane path.
TEST(TorusBootstrap, WideTransformsGiveTheNarrowPathsBits) {
  if (best_isa() != Isa::avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  const Isa before = default_isa();
  // Groupings of 1, 2 and 4 bits (15 patterns a step), gadgets of one level
  // (the presets' products, two rows) and two (any number of rows).
  for (unsigned g : {1u, 2u, 4u})
  for (std::size_t levels : {1u, 2u}) {
    TorusParams p = toy();
    p.ring_dimension = 512;
    p.pbs_levels = levels;
    p.pbs_base_log = levels == 1 ? 20 : 15;
    p.grouping = g;
    std::vector<u64> outs[2];
    for (int wide = 0; wide < 2; ++wide) {
      set_default_isa(wide ? Isa::avx512 : Isa::avx2);
      Prng prng = Prng::from_seed(Prng::Seed{41});
      const TorusSecretKey key(p, prng);
      const TorusBootstrapper boot(key, prng);
      ASSERT_EQ(boot.bootstrap_key().lanes(), wide ? TorusBootstrapKey::kWideLanes : TorusBootstrapKey::kNarrowLanes);
      const std::size_t N = p.ring_dimension, count = 8;
      std::vector<u64> tv(N), mu(count), cts(count * (N + 1));
      for (std::size_t j = 0; j < N; ++j) tv[j] = (u64{j} * 0x9E3779B97F4A7C15ull) & ~((u64{1} << 40) - 1);
      for (std::size_t i = 0; i < count; ++i) mu[i] = u64{i} << 60;
      key.encrypt(mu.data(), count, cts.data(), prng);
      outs[wide].resize(count * (N + 1));
      boot.bootstrap_many(cts.data(), count, tv.data(), outs[wide].data(), 1);
    }
    set_default_isa(before);
    EXPECT_EQ(outs[0], outs[1]) << "grouping " << g << ", levels " << levels;
  }
}

TEST(TorusBootstrap, BatchesGiveTheBitsOfOneAtATime) {
  // Seven ciphertexts on one thread: a batch of four, then one of three, each
  // sharing its steps' keys; the same bits as seven calls of one.
  for (unsigned g : {1u, 2u}) {
    Prng prng = Prng::from_seed(Prng::Seed{static_cast<std::uint8_t>(40 + g)});
    TorusParams p = toy();
    p.grouping = g;
    const TorusSecretKey key(p, prng);
    const TorusBootstrapper boot(key, prng);
    const std::size_t N = p.ring_dimension, count = 7;
    std::vector<u64> tv(N), mu(count), cts(count * (N + 1)), batched(count * (N + 1)), single(count * (N + 1));
    for (std::size_t j = 0; j < N; ++j) tv[j] = (j * 40503) << 44;
    for (std::size_t c = 0; c < count; ++c) mu[c] = c << 60;
    key.encrypt(mu.data(), count, cts.data(), prng);
    boot.bootstrap_many(cts.data(), count, tv.data(), batched.data(), 1);
    for (std::size_t c = 0; c < count; ++c)
      boot.bootstrap_many(cts.data() + c * (N + 1), 1, tv.data(), single.data() + c * (N + 1), 1);
    EXPECT_EQ(batched, single) << "g=" << g;
  }
}

TEST(TorusBootstrap, ManyTablesFromOneRotation) {
  Prng prng = Prng::from_seed(Prng::Seed{4});
  const TorusParams p = toy();
  const TorusSecretKey key(p, prng);
  const TorusBootstrapper boot(key, prng);
  const std::size_t N = p.ring_dimension, group = 2;
  const unsigned bits = 2;
  const u64 slots = u64{1} << bits, delta = u64{1} << (63 - bits);
  auto f = [&](u64 m, std::size_t k) { return k == 0 ? (m + 1) % slots : (3 * m) % slots; };
  std::vector<u64> tv(N);
  for (std::size_t j = 0; j < N; ++j) tv[j] = f((j - j % group) * slots / N, j % group) * delta;
  std::vector<u64> mu(slots), cts(slots * (N + 1)), out(slots * group * (N + 1)), phases(slots * group);
  for (u64 m = 0; m < slots; ++m) mu[m] = m * delta + delta / 2;
  key.encrypt(mu.data(), slots, cts.data(), prng);
  boot.bootstrap_many(cts.data(), slots, tv.data(), out.data(), 1, group);
  key.phases(out.data(), slots * group, phases.data());
  for (u64 m = 0; m < slots; ++m)
    for (std::size_t k = 0; k < group; ++k)
      EXPECT_EQ(((phases[m * group + k] + delta / 2) / delta) % (2 * slots), f(m, k)) << "m=" << m << " k=" << k;
}

TEST(TorusBootstrap, KeysRebuiltFromSeedsAndBodiesGiveTheSameBits) {
  Prng prng = Prng::from_seed(Prng::Seed{5});
  const TorusParams p = toy();
  const TorusSecretKey key(p, prng);
  const TorusBootstrapper made(key, prng);
  const TorusBootstrapper loaded(p, made.bootstrap_key().seed(), made.bootstrap_key().bodies().data(),
                                 made.key_switch_key().seed(), made.key_switch_key().bodies().data());
  const std::size_t N = p.ring_dimension;
  std::vector<u64> mu{u64{5} << 59, u64{3} << 61}, cts(2 * (N + 1)), a(2 * (N + 1)), b(2 * (N + 1)), tv(N);
  for (std::size_t j = 0; j < N; ++j) tv[j] = (j * 7919) << 40;
  key.encrypt(mu.data(), 2, cts.data(), prng);
  made.bootstrap_many(cts.data(), 2, tv.data(), a.data(), 1);
  loaded.bootstrap_many(cts.data(), 2, tv.data(), b.data(), 1);
  EXPECT_EQ(a, b);
}

TEST(TorusParams, RefusesSetsThatCannotRun) {
  TorusParams p = toy();
  p.ring_dimension = 300;
  EXPECT_THROW(p.validate(), InvalidArgument);
  p = toy();
  p.pbs_base_log = 32;
  EXPECT_THROW(p.validate(), InvalidArgument);
  p = toy();
  p.ks_levels = 0;
  EXPECT_THROW(p.validate(), InvalidArgument);
  for (unsigned g : {0u, 3u, 5u}) {  // 3 does not divide n = 32
    p = toy();
    p.grouping = g;
    EXPECT_THROW(p.validate(), InvalidArgument) << "grouping " << g;
  }
}

TEST(TorusParams, OnlyMultiBitSetsHashTheirGrouping) {
  TorusParams one = toy(), two = toy();
  two.grouping = 2;
  EXPECT_NE(one.identity(), two.identity());
  EXPECT_EQ(one.bootstrap_key_count(), 32u);
  EXPECT_EQ(two.bootstrap_key_count(), 48u);  // 16 groups x 3 patterns
}

}  // namespace
}  // namespace ringfire::tfhe
