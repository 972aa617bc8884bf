// The CPU backend's AVX-512 paths (rns_isa avx512) give the words of its AVX2
// paths: NTTs, products, inner products, linear combinations and base conversions,
// on limbs below and above IFMA's 2^50, at the ends of the input ranges and
// across the inner product's chunk of eight terms. Skipped without AVX-512 IFMA.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ntt_kernels.h"
#include "backends/cpu/rns_isa.h"
#include "ringfire/arith/primes.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/rns_base.h"

namespace ringfire {
namespace {

struct IsaRestore {
  cpu::RnsIsa was = cpu::rns_isa();
  ~IsaRestore() { cpu::set_rns_isa(was); }
};

// The words `run` writes under each instruction set.
std::pair<std::vector<u64>, std::vector<u64>> both(const std::function<std::vector<u64>()>& run) {
  IsaRestore restore;
  cpu::set_rns_isa(cpu::RnsIsa::avx512);
  std::vector<u64> wide = run();
  cpu::set_rns_isa(cpu::RnsIsa::avx2);
  return {wide, run()};
}

// A base of primes of these sizes (bits), each distinct.
RnsBasePtr base_of(std::size_t n, const std::vector<int>& bits) {
  std::vector<u64> primes;
  for (int b : bits) {
    for (u64 p : find_ntt_primes(b, 4, n)) {
      if (std::find(primes.begin(), primes.end(), p) == primes.end()) {
        primes.push_back(p);
        break;
      }
    }
  }
  return std::make_shared<const RnsBase>(n, primes);
}

// Reduced words for every limb; `edge` fills them with q - 1 and 0 instead.
std::vector<u64> words(const RnsBase& base, std::mt19937_64& rng, bool edge) {
  std::vector<u64> w(base.size() * base.n());
  for (std::size_t l = 0; l < base.size(); ++l) {
    const u64 q = base.modulus(l).value();
    for (std::size_t j = 0; j < base.n(); ++j) w[l * base.n() + j] = edge ? (j % 5 ? q - 1 : 0) : rng() % q;
  }
  return w;
}

class CpuAvx512 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::rns_avx512_available()) GTEST_SKIP() << "no AVX-512 IFMA on this CPU";
  }
  cpu::CpuBackend& be = cpu::cpu_backend();
  std::mt19937_64 rng{11};
};

// Forward and inverse, whole and truncated, for every degree the kernels take
// and primes up to their bound (IFMA's below 2^50, the 64-bit lanes' above),
// on random words and on the ends of the input ranges (forward < q; inverse
// < 2q, its lazy input).
TEST_F(CpuAvx512, NttsGiveTheAvx2Words) {
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
          auto [wide, narrow] = both([&] {
            std::vector<u64> v = in;
            if (kind == 0) cpu::ntt_forward_limb(v.data(), tables);
            if (kind == 1) cpu::ntt_forward_truncated_limb(v.data(), tables);
            if (kind == 2) cpu::ntt_inverse_limb(v.data(), tables);
            if (kind == 3) cpu::ntt_inverse_truncated_limb(v.data(), tables);
            return v;
          });
          ASSERT_EQ(wide, narrow) << "n " << n << " q " << q << " kind " << kind << " pattern " << pattern
                                  << (inverse ? " inverse" : " forward") << (truncated ? " truncated" : "");
        }
      }
    }
  }
}

TEST_F(CpuAvx512, ProductsGiveTheAvx2Words) {
  for (std::size_t n : {64, 1024, 8192}) {
    const RnsBasePtr base = base_of(n, {20, 36, 41, 49, 50, 55, 60});
    for (bool edge : {false, true}) {
      const std::vector<u64> a = words(*base, rng, edge), b = words(*base, rng, false), c = words(*base, rng, edge);
      auto [w1, n1] = both([&] {
        std::vector<u64> out(a.size());
        be.multiply(a.data(), b.data(), out.data(), 1, *base);
        return out;
      });
      ASSERT_EQ(w1, n1) << "multiply n " << n;
      auto [w2, n2] = both([&] {
        std::vector<u64> acc = c;
        be.multiply_add(a.data(), b.data(), acc.data(), 1, *base);
        return acc;
      });
      ASSERT_EQ(w2, n2) << "multiply_add n " << n;
    }
  }
}

TEST_F(CpuAvx512, InnerProductsGiveTheAvx2Words) {
  const std::size_t n = 512;
  const RnsBasePtr base = base_of(n, {30, 41, 49, 50, 60});
  for (std::size_t terms : {1, 3, 8, 9, 17, 40}) {
    for (bool edge : {false, true}) {
      std::vector<std::vector<u64>> in, kb, ka;
      std::vector<const u64*> pin, pb, pa;
      for (std::size_t t = 0; t < terms; ++t) {
        in.push_back(words(*base, rng, edge));
        kb.push_back(words(*base, rng, edge));
        ka.push_back(words(*base, rng, false));
      }
      for (std::size_t t = 0; t < terms; ++t) {
        pin.push_back(in[t].data());
        pb.push_back(kb[t].data());
        pa.push_back(ka[t].data());
      }
      auto [wide, narrow] = both([&] {
        std::vector<u64> out(2 * in[0].size());
        be.inner_product_pair(pin.data(), pb.data(), pa.data(), terms, out.data(), out.data() + in[0].size(), *base);
        return out;
      });
      ASSERT_EQ(wide, narrow) << "terms " << terms << (edge ? " edge" : "");
    }
  }
}

TEST_F(CpuAvx512, LinearCombinationsGiveTheAvx2Words) {
  const std::size_t n = 2048;
  const RnsBasePtr base = base_of(n, {30, 45, 50, 58});
  for (std::size_t terms : {1, 2, 5}) {
    std::vector<std::vector<u64>> x;
    std::vector<const u64*> px;
    std::vector<u64> weights(terms * base->size());
    for (std::size_t t = 0; t < terms; ++t) x.push_back(words(*base, rng, t == 1));
    for (std::size_t t = 0; t < terms; ++t) px.push_back(x[t].data());
    for (std::size_t t = 0; t < terms; ++t)
      for (std::size_t l = 0; l < base->size(); ++l)
        weights[t * base->size() + l] = t == 2 ? 0 : (t % 2 ? base->modulus(l).value() - 1 : rng() % base->modulus(l).value());
    auto [wide, narrow] = both([&] {
      std::vector<u64> out(x[0].size());
      be.linear_combination(px.data(), weights.data(), terms, out.data(), 1, *base);
      return out;
    });
    ASSERT_EQ(wide, narrow) << "terms " << terms;
  }
}

// A dense layer's outputs side by side (linear_combinations: four outputs per pass over the
// inputs, IFMA's products summed unreduced over chunks of eight terms) give the words of one
// output at a time on AVX2: any count of outputs (the last ones outside a group of four),
// primes on both sides of 2^50, inputs at the ends of their range, weights 0 and q - 1, two
// polynomials per input, terms within, at and across a chunk's end, and thousands of them.
TEST_F(CpuAvx512, DenseLayersGiveTheWordsOfOneOutputAtATime) {
  for (const auto& [n, terms_list] : std::vector<std::pair<std::size_t, std::vector<std::size_t>>>{
           {256, {1, 2, 7, 8, 9, 33}}, {64, {4096, 4097}}}) {
    const RnsBasePtr base = base_of(n, {30, 45, 49, 50, 58, 60});
    const std::size_t limbs = base->size(), batch = 2;
    for (std::size_t terms : terms_list) {
      std::vector<std::vector<u64>> x;
      std::vector<const u64*> px;
      for (std::size_t t = 0; t < terms; ++t) {
        // Many terms at the top of their range: every chunk's sum and every partial sum near
        // its bound.
        const bool many = terms > 1000;
        std::vector<u64> poly = words(*base, rng, many || t % 3 == 1);
        std::vector<u64> second = words(*base, rng, many || t % 3 == 2);
        poly.insert(poly.end(), second.begin(), second.end());
        x.push_back(std::move(poly));
      }
      for (const auto& v : x) px.push_back(v.data());
      for (std::size_t outputs : {1, 2, 3, 4, 5, 8, 9}) {
        if (terms > 1000 && outputs != 5) continue;
        std::vector<u64> weights(outputs * terms * limbs);
        for (std::size_t k = 0; k < weights.size(); ++k) {
          const u64 q = base->modulus(k % limbs).value();
          weights[k] = terms > 1000 ? q - 1 - k % 3 : (k % 7 == 3 ? 0 : (k % 5 == 1 ? q - 1 : rng() % q));
        }
        const std::size_t words_out = batch * limbs * n;
        auto [wide, narrow] = both([&] {
          std::vector<u64> out(outputs * words_out, 0xDEAD);
          std::vector<u64*> outs;
          for (std::size_t k = 0; k < outputs; ++k) outs.push_back(out.data() + k * words_out);
          be.linear_combinations(px.data(), weights.data(), terms, outs.data(), outputs, batch, *base);
          return out;
        });
        IsaRestore restore;
        cpu::set_rns_isa(cpu::RnsIsa::avx2);
        std::vector<u64> one_at_a_time(outputs * words_out);
        for (std::size_t k = 0; k < outputs; ++k)
          be.linear_combination(px.data(), weights.data() + k * terms * limbs, terms, one_at_a_time.data() + k * words_out,
                                batch, *base);
        ASSERT_EQ(wide, one_at_a_time) << "n " << n << ", terms " << terms << ", outputs " << outputs;
        ASSERT_EQ(narrow, one_at_a_time) << "n " << n << ", terms " << terms << ", outputs " << outputs;
      }
    }
  }
}

TEST_F(CpuAvx512, BaseConversionsGiveTheAvx2Words) {
  // Sources below 2^52 (IFMA's products) and with a 60-bit prime among them;
  // targets on both sides of 2^50.
  for (std::size_t n : {64, 256, 4096}) {
    for (const auto& [from_bits, to_bits] :
         std::vector<std::pair<std::vector<int>, std::vector<int>>>{{{41, 40, 41, 40}, {60, 60, 60, 41, 40}},
                                                                    {{60, 41, 40}, {60, 41, 50}},
                                                                    {{60, 60, 60}, {40, 41, 40, 41, 60}}}) {
      const RnsBasePtr from = base_of(n, from_bits), to = base_of(n, to_bits);
      const BaseConverter conv(from, to);
      for (BaseConversion kind : {BaseConversion::fast, BaseConversion::exact}) {
        for (bool edge : {false, true}) {
          const std::vector<u64> in = words(*from, rng, edge);
          auto [wide, narrow] = both([&] {
            std::vector<u64> out(to->size() * n);
            be.base_convert(in.data(), out.data(), 1, conv, kind);
            return out;
          });
          ASSERT_EQ(wide, narrow) << "n " << n << " kind " << static_cast<int>(kind) << (edge ? " edge" : "");
        }
      }
    }
  }
}

TEST(CpuWithoutAvx512, RefusesTheAvx512Kernels) {
  if (cpu::rns_avx512_available()) GTEST_SKIP() << "this CPU has AVX-512 IFMA";
  EXPECT_THROW(cpu::set_rns_isa(cpu::RnsIsa::avx512), InvalidArgument);
  EXPECT_EQ(cpu::rns_isa(), cpu::RnsIsa::avx2);
}

}  // namespace
}  // namespace ringfire
