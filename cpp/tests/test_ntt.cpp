// NTT and polynomial products against a schoolbook negacyclic product.
#include <gtest/gtest.h>

#include <random>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "backends/cpu/ntt_kernels.h"
#include "backends/cpu/rns_isa.h"
#include "backends/cuda/cuda_info.h"
#include "ringfire/ring/poly_ops.h"

namespace ringfire {
namespace {

std::vector<u64> schoolbook(const u64* a, const u64* b, std::size_t n, const Modulus& mod) {
  std::vector<u64> c(n, 0);
  const u64 q = mod.value();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const u64 p = mul_mod(a[i], b[j], mod);
      const std::size_t k = i + j;
      if (k < n) {
        c[k] = add_mod(c[k], p, q);
      } else {
        c[k - n] = sub_mod(c[k - n], p, q);
      }
    }
  return c;
}

Poly random_poly(const RnsBasePtr& base, std::mt19937_64& rng) {
  Poly p(base);
  for (std::size_t l = 0; l < base->size(); ++l) {
    std::uniform_int_distribution<u64> dist(0, base->modulus(l).value() - 1);
    for (std::size_t j = 0; j < base->n(); ++j) p.limb(l)[j] = dist(rng);
  }
  return p;
}

class NttTest : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {};

TEST_P(NttTest, ProductsMatchSchoolbookAndRoundTrip) {
  const auto [n, bits] = GetParam();
  std::mt19937_64 rng(n * 131 + bits);
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(bits, 2, n));
  const Poly a = random_poly(base, rng), b = random_poly(base, rng);
  for (PolyMulMethod method : {PolyMulMethod::ntt, PolyMulMethod::karatsuba}) {
    Poly c(base);
    poly_multiply(a, b, c, method);
    for (std::size_t l = 0; l < base->size(); ++l) {
      const auto expected = schoolbook(a.limb(l), b.limb(l), n, base->modulus(l));
      for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(c.limb(l)[j], expected[j]) << "limb " << l << " j " << j;
    }
  }
  Poly t = a.clone();
  ntt_inplace(t);
  EXPECT_EQ(t.form(), Form::eval);
  intt_inplace(t);
  for (std::size_t j = 0; j < base->size() * n; ++j) ASSERT_EQ(t.data()[j], a.data()[j]);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NttTest,
                         ::testing::Combine(::testing::Values(16, 64, 256), ::testing::Values(20, 40, 61)));

// The AVX-512 IFMA kernels give the AVX2 kernels' words (both fully reduce),
// forward and inverse, whole and truncated, for every degree they take and
// primes up to their bound, on random words and on the ends of the input
// ranges (forward < q; inverse < 2q, its lazy input).
TEST(NttAvx512, GivesTheAvx2KernelsWords) {
  if (!cpu::rns_avx512_available()) GTEST_SKIP() << "no AVX-512 IFMA on this CPU";
  struct Restore {
    cpu::RnsIsa was = cpu::rns_isa();
    ~Restore() { cpu::set_rns_isa(was); }
  } restore;
  std::mt19937_64 rng(7);
  for (std::size_t n = cpu::kNttAvx512MinDegree; n <= 65536; n *= 2) {
    for (int bits : {20, 30, 41, 49, 50, 51, 55, 61}) {
      const Modulus mod(find_ntt_primes(bits, 1, n).front());
      const u64 q = mod.value();
      ASSERT_LT(q, cpu::kNttAvx512Bound);
      const NttTables tables(n, mod);
      ASSERT_TRUE(cpu::ntt_avx512_fits(tables));
      for (int pattern = 0; pattern < 3; ++pattern) {
        for (int kind = 0; kind < 4; ++kind) {
          const bool inverse = kind >= 2, truncated = kind % 2 == 1;
          const u64 top = inverse ? 2 * q : q;  // the kernels' input ranges
          std::vector<u64> in(n);
          std::uniform_int_distribution<u64> any(0, top - 1);
          for (std::size_t j = 0; j < n; ++j)
            in[j] = pattern == 0 ? any(rng) : pattern == 1 ? top - 1 - (j % 3) : (j % 2 ? top - 1 : 0);
          std::vector<u64> wide = in, narrow = in;
          auto run = [&](std::vector<u64>& v) {
            if (kind == 0) cpu::ntt_forward_limb(v.data(), tables);
            if (kind == 1) cpu::ntt_forward_truncated_limb(v.data(), tables);
            if (kind == 2) cpu::ntt_inverse_limb(v.data(), tables);
            if (kind == 3) cpu::ntt_inverse_truncated_limb(v.data(), tables);
          };
          cpu::set_rns_isa(cpu::RnsIsa::avx512);
          run(wide);
          cpu::set_rns_isa(cpu::RnsIsa::avx2);
          run(narrow);
          ASSERT_EQ(wide, narrow) << "n " << n << " q " << q << " kind " << kind << " pattern " << pattern
                                  << (inverse ? " inverse" : " forward") << (truncated ? " truncated" : "");
        }
      }
    }
  }
}

TEST(NttAvx512, RefusesACpuWithoutIt) {
  if (cpu::rns_avx512_available()) GTEST_SKIP() << "this CPU has AVX-512 IFMA";
  EXPECT_THROW(cpu::set_rns_isa(cpu::RnsIsa::avx512), InvalidArgument);
  EXPECT_EQ(cpu::rns_isa(), cpu::RnsIsa::avx2);
}

TEST(Ntt, EvaluationsArePowersOfPsi) {
  // Slot s of the forward NTT holds a(psi^(2 br(s) + 1)).
  const std::size_t n = 32;
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(45, 1, n));
  const Modulus& mod = base->modulus(0);
  std::mt19937_64 rng(3);
  Poly a = random_poly(base, rng);
  const Poly coeffs = a.clone();
  ntt_inplace(a);
  const u64 psi = base->ntt(0).psi();
  for (std::size_t s = 0; s < n; ++s) {
    const u64 x = pow_mod(psi, 2 * reverse_bits(s, 5) + 1, mod);
    u64 value = 0;
    for (std::size_t j = n; j-- > 0;) value = mad_mod(value, x, coeffs.data()[j], mod);
    ASSERT_EQ(a.data()[s], value) << "slot " << s;
  }
}

TEST(Ntt, AutomorphismCommutesWithNtt) {
  const std::size_t n = 64;
  const auto base = std::make_shared<const RnsBase>(n, find_ntt_primes(50, 2, n));
  std::mt19937_64 rng(5);
  const Poly a = random_poly(base, rng);
  for (u64 k : {u64{3}, u64{5}, u64{2 * n - 1}, u64{1}}) {
    Poly coeff_result(base);
    automorphism(a, k, coeff_result);
    ntt_inplace(coeff_result);
    Poly a_eval = a.clone();
    ntt_inplace(a_eval);
    Poly eval_result(base, Form::eval);
    automorphism(a_eval, k, eval_result);
    for (std::size_t j = 0; j < base->size() * n; ++j)
      ASSERT_EQ(eval_result.data()[j], coeff_result.data()[j]) << "k=" << k;
  }
}

TEST(Ntt, ChecksFormsAndBases) {
  const auto base = std::make_shared<const RnsBase>(16, find_ntt_primes(30, 1, 16));
  const auto other = std::make_shared<const RnsBase>(16, find_ntt_primes(31, 1, 16));
  Poly a(base), b(other), c(base);
  EXPECT_THROW(intt_inplace(a), InvalidArgument);
  EXPECT_THROW(add(a, b, c), InvalidArgument);
  EXPECT_THROW(multiply(a, c, c), InvalidArgument);  // coefficient form
  EXPECT_THROW(automorphism(a, 2, c), InvalidArgument);
  EXPECT_THROW(NttTables(16, Modulus(41)), InvalidArgument);  // 41 != 1 mod 32
  EXPECT_THROW(NttTables(24, Modulus(97)), InvalidArgument);
}

TEST(Ntt, CudaDeviceIsAClearError) {
  const auto base = std::make_shared<const RnsBase>(16, find_ntt_primes(30, 1, 16));
  if (cuda_device_count() == 0) {
    EXPECT_THROW(backend_for(Device::parse("cuda")), NotSupported);
  }
  EXPECT_THROW(Device::parse("tpu"), InvalidArgument);
}

}  // namespace
}  // namespace ringfire
