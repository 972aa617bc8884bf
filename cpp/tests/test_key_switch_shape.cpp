// The key-switching shape chooser: digits covered by P, the cost model's
// ordering, the security bound, and what Parameters records.
#include <gtest/gtest.h>

#include <limits>

#include "ckks_test_support.h"
#include "ringfire/rlwe/key_switch_shape.h"
#include "ringfire/rlwe/security.h"

namespace ringfire {
namespace {

TEST(KeySwitchShape, FewestDigitsCoverTheirSpecialPrimes) {
  const std::vector<double> q = {60, 40, 40, 40, 40, 40, 40};
  EXPECT_EQ(fewest_digits(q, 60.0), 7u);   // one prime per digit
  EXPECT_EQ(fewest_digits(q, 120.0), 4u);  // (60,40) (40,40) (40,40) (40)
  EXPECT_EQ(fewest_digits(q, 300.0), 1u);
}

TEST(KeySwitchShape, FewerDigitsCostLessAndTheBoundIsKept) {
  const std::vector<int> q(21, 40);
  EXPECT_LT(key_switch_cost(1 << 16, q, 5, 3), key_switch_cost(1 << 16, q, 1, 21));
  const KeySwitchShape free = choose_key_switch_shape(1 << 16, q, 60, std::numeric_limits<double>::infinity());
  EXPECT_GT(free.special_count, 1u);
  EXPECT_LT(free.cost, free.one_prime_cost);
  // 21 x 40 = 840 bits: a bound of 900 leaves room for exactly one 60-bit special prime.
  const KeySwitchShape tight = choose_key_switch_shape(1 << 16, q, 60, 900.0);
  EXPECT_EQ(tight.special_count, 1u);
  EXPECT_EQ(tight.dnum, 21u);
  EXPECT_NE(tight.reason.find("security bound"), std::string::npos);
}

TEST(KeySwitchShape, ParametersChooseAndSayWhy) {
  ParameterLiteral lit;
  lit.poly_degree = 1 << 16;
  lit.q_bits = std::vector<int>(1, 60);
  lit.q_bits.insert(lit.q_bits.end(), 20, 40);
  lit.special_prime_bits = 60;
  lit.scale_bits = 40;
  const Parameters params(lit);
  EXPECT_GT(params.p_primes().size(), 1u);
  EXPECT_LE(params.dnum(), 4u);
  EXPECT_LE(params.log_qp(), max_log_qp(1 << 16, 128));
  EXPECT_NE(params.describe().find("chosen for speed"), std::string::npos);
  lit.special_prime_bits = 0;  // neither p_bits nor a size: refused
  test::expect_invalid([&] { Parameters{lit}; }, "special prime");
}

}  // namespace
}  // namespace ringfire
