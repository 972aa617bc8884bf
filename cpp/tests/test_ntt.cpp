// NTT and polynomial products against a schoolbook negacyclic product.
#include <gtest/gtest.h>

#include <random>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
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
