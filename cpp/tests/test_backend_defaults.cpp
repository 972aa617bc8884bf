// The Backend interface's default methods (ring/backend.h), which the CPU and
// tracing backends use and a device backend may replace: the tensor product,
// the out-of-place inverse NTT and the strided block copy, each against a
// reference computed here word by word.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/ring/backend.h"

namespace ringfire {
namespace {

struct Polys {
  std::shared_ptr<const RnsBase> base;
  std::mt19937_64 rng{2026};
  explicit Polys(std::size_t n = 64) : base(std::make_shared<const RnsBase>(n, find_ntt_primes(50, 3, n))) {}
  std::size_t words() const { return base->size() * base->n(); }
  std::vector<u64> random() {
    std::vector<u64> v(words());
    for (std::size_t l = 0; l < base->size(); ++l) {
      std::uniform_int_distribution<u64> dist(0, base->modulus(l).value() - 1);
      for (std::size_t j = 0; j < base->n(); ++j) v[l * base->n() + j] = dist(rng);
    }
    return v;
  }
};

TEST(BackendDefaults, TheTensorIsThreeProductsAndASum) {
  Polys p;
  Backend& be = backend_for(Device::cpu());
  const auto a0 = p.random(), a1 = p.random(), b0 = p.random(), b1 = p.random();
  std::vector<u64> d0(p.words()), d1(p.words()), d2(p.words()), s0(p.words()), s1(p.words()), s2(p.words());
  be.tensor(a0.data(), a1.data(), b0.data(), b1.data(), d0.data(), d1.data(), d2.data(), *p.base);
  be.tensor(a0.data(), a1.data(), a0.data(), a1.data(), s0.data(), s1.data(), s2.data(), *p.base);  // a square
  for (std::size_t i = 0; i < p.words(); ++i) {
    const Modulus& q = p.base->modulus(i / p.base->n());
    ASSERT_EQ(d0[i], mul_mod(a0[i], b0[i], q));
    ASSERT_EQ(d1[i], add_mod(mul_mod(a0[i], b1[i], q), mul_mod(a1[i], b0[i], q), q.value()));
    ASSERT_EQ(d2[i], mul_mod(a1[i], b1[i], q));
    ASSERT_EQ(s0[i], mul_mod(a0[i], a0[i], q));
    ASSERT_EQ(s1[i], add_mod(mul_mod(a0[i], a1[i], q), mul_mod(a0[i], a1[i], q), q.value()));
    ASSERT_EQ(s2[i], mul_mod(a1[i], a1[i], q));
  }
}

TEST(BackendDefaults, TheInverseNttIntoLeavesItsSourceAlone) {
  Polys p;
  Backend& be = backend_for(Device::cpu());
  const auto src = p.random();
  std::vector<u64> kept = src, in_place = src, out(p.words());
  be.ntt_inverse_into(kept.data(), out.data(), 1, *p.base);
  be.ntt_inverse(in_place.data(), 1, *p.base);
  EXPECT_EQ(kept, src);
  EXPECT_EQ(out, in_place);
}

TEST(BackendDefaults, BlocksCopyAtTheirSteps) {
  Backend& be = backend_for(Device::cpu());
  std::vector<u64> src(20), dst(24, 7);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = 100 + i;
  be.copy_blocks(src.data(), 6, dst.data() + 1, 8, 3, 3);  // blocks [0,3), [6,9), [12,15) to 1, 9, 17
  const std::vector<u64> want = {7, 100, 101, 102, 7, 7, 7, 7, 7, 106, 107, 108,
                                 7, 7, 7, 7, 7, 112, 113, 114, 7, 7, 7, 7};
  EXPECT_EQ(dst, want);
  be.copy_blocks(src.data(), 6, dst.data(), 8, 3, 0);  // nothing
  EXPECT_EQ(dst, want);
}

}  // namespace
}  // namespace ringfire
