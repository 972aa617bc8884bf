// The RF_HD kernel bodies of ring/kernel_bodies.h (what each CUDA thread
// runs) against the CPU backend, the bit-exact oracle. Loops here replay the
// CUDA kernels' structure on the host (the radix-2 stage kernels, the
// shared-memory pass plan with its block/tile addressing, the chunked linear
// combination, the three base-conversion passes with the flagged multiword
// fix-up), so everything but the launch itself is covered without a GPU.
#include "ringfire/ring/kernel_bodies.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "ringfire/arith/modular.h"
#include "ringfire/arith/primes.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/base_converter.h"
#include "ringfire/ring/multiword.h"

namespace ringfire {
namespace {

using namespace ringfire::kernel;

Backend& cpu() { return backend_for(Device::cpu()); }

std::vector<u64> random_polys(const RnsBase& base, std::size_t batch, std::mt19937_64& rng) {
  const std::size_t n = base.n(), limbs = base.size();
  std::vector<u64> v(batch * limbs * n);
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t l = 0; l < limbs; ++l) {
      std::uniform_int_distribution<u64> dist(0, base.modulus(l).value() - 1);
      for (std::size_t j = 0; j < n; ++j) v[(p * limbs + l) * n + j] = dist(rng);
    }
  return v;
}

// Two 61-bit and two 60-bit primes for N.
std::shared_ptr<const RnsBase> mixed_base(std::size_t n) {
  std::vector<u64> qs = find_ntt_primes(61, 2, n);
  for (u64 q : find_ntt_primes(60, 2, n)) qs.push_back(q);
  return std::make_shared<const RnsBase>(n, qs);
}

// ---------------------------------------------------------------------------
// Radix-2 (the baseline kernel: one butterfly per thread, one launch per stage)

void radix2_forward(u64* a, const NttTables& t) {
  const int log_n = t.log_n();
  const u64 q = t.modulus().value();
  for (int s = 0; s < log_n; ++s)
    for (std::size_t b = 0; b < t.n() / 2; ++b) {
      const int log_dist = log_n - s - 1;
      const std::size_t i = butterfly_first(b, log_dist), k = i + (std::size_t{1} << log_dist);
      const std::size_t w = twiddle_index(i, s, log_n);
      ct_butterfly(a[i], a[k], t.forward()[w], t.forward_shoup()[w], q);
      if (s == log_n - 1) {
        a[i] = reduce_4q(a[i], q);
        a[k] = reduce_4q(a[k], q);
      }
    }
}

void radix2_inverse(u64* a, const NttTables& t) {
  const int log_n = t.log_n();
  const u64 q = t.modulus().value();
  for (int s = log_n - 1; s >= 0; --s)
    for (std::size_t b = 0; b < t.n() / 2; ++b) {
      const int log_dist = log_n - s - 1;
      const std::size_t i = butterfly_first(b, log_dist), k = i + (std::size_t{1} << log_dist);
      if (s == 0) {
        gs_last_butterfly(a[i], a[k], t.n_inv(), t.last_twiddle_n_inv(), q);
      } else {
        const std::size_t w = twiddle_index(i, s, log_n);
        gs_butterfly(a[i], a[k], t.inverse()[w], t.inverse_shoup()[w], q);
      }
    }
}

class KernelNtt : public ::testing::TestWithParam<int> {};

TEST_P(KernelNtt, TextbookRadix2LoopEqualsCpuBackend) {
  const std::size_t n = std::size_t{1} << GetParam();
  const auto base = mixed_base(n);
  std::mt19937_64 rng(GetParam());
  const std::vector<u64> x = random_polys(*base, 1, rng);
  std::vector<u64> want = x, got = x;
  cpu().ntt_forward(want.data(), 1, *base);
  for (std::size_t l = 0; l < base->size(); ++l) radix2_forward(got.data() + l * n, base->ntt(l));
  ASSERT_EQ(got, want);
  cpu().ntt_inverse(want.data(), 1, *base);
  for (std::size_t l = 0; l < base->size(); ++l) radix2_inverse(got.data() + l * n, base->ntt(l));
  ASSERT_EQ(got, want);
  EXPECT_EQ(got, x);
}

// ---------------------------------------------------------------------------
// The shared-memory pass kernel, replayed block by block on the host.

template <bool Forward>
void replay_pass(const u64* src, const u64* src2, u64* dst, const NttTables& t, const NttPass& pass) {
  const int log_n = t.log_n();
  const Modulus& mod = t.modulus();
  const u64 q = mod.value();
  std::vector<u64> tile(std::size_t{1} << kLogTile);
  const std::size_t elements = pass.block_elements();
  const std::size_t cols_mask = (std::size_t{1} << pass.log_cols) - 1;
  const int last_stage = pass.first_stage + pass.stages - 1;
  for (std::size_t block = 0; block < pass.blocks(); ++block) {
    const std::size_t origin = pass.block_origin(block, log_n);
    for (std::size_t e = 0; e < elements; ++e) {
      const std::size_t g = pass.element(origin, e);
      tile[e] = src2 == nullptr ? src[g] : mul_mod(src[g], src2[g], mod);
    }
    // The block's twiddles gathered into slots first, as the kernel does.
    std::vector<std::pair<u64, u64>> slots(pass.twiddle_slots());
    for (std::size_t slot = 1; slot < slots.size(); ++slot) {
      const std::size_t w = pass.twiddle_slot_source(slot, origin, log_n);
      slots[slot] = Forward ? std::pair{t.forward()[w], t.forward_shoup()[w]}
                            : std::pair{t.inverse()[w], t.inverse_shoup()[w]};
    }
    // Stage pairs in registers (radix 4), then a lone stage, as the kernel.
    auto twiddle = [&](int s, std::size_t row, std::size_t /*c*/, bool /*fwd*/) {
      return slots[pass.twiddle_slot(s, row)];
    };
    int lo = Forward ? pass.first_stage : last_stage;
    for (int done = 0; done < pass.stages;) {
      if (done + 1 < pass.stages) {
        const int s_lo = Forward ? lo : lo - 1;
        const int log_d = last_stage - s_lo - 1;
        for (std::size_t u = 0; u < elements / 4; ++u) {
          const std::size_t c = u & cols_mask, p = u >> pass.log_cols;
          const std::size_t r0 = ((p >> log_d) << (log_d + 2)) | (p & ((std::size_t{1} << log_d) - 1));
          const std::size_t e0 = (r0 << pass.log_cols) | c, step = std::size_t{1} << (log_d + pass.log_cols);
          u64 &x0 = tile[e0], &x1 = tile[e0 + step], &x2 = tile[e0 + 2 * step], &x3 = tile[e0 + 3 * step];
          const auto wa = twiddle(s_lo, r0, c, Forward), wb = twiddle(s_lo + 1, r0, c, Forward),
                     wc = twiddle(s_lo + 1, r0 + (std::size_t{2} << log_d), c, Forward);
          if (Forward) {
            ct_butterfly(x0, x2, wa.first, wa.second, q);
            ct_butterfly(x1, x3, wa.first, wa.second, q);
            ct_butterfly(x0, x1, wb.first, wb.second, q);
            ct_butterfly(x2, x3, wc.first, wc.second, q);
          } else {
            gs_butterfly(x0, x1, wb.first, wb.second, q);
            gs_butterfly(x2, x3, wc.first, wc.second, q);
            if (s_lo == 0) {
              gs_last_butterfly(x0, x2, t.n_inv(), t.last_twiddle_n_inv(), q);
              gs_last_butterfly(x1, x3, t.n_inv(), t.last_twiddle_n_inv(), q);
            } else {
              gs_butterfly(x0, x2, wa.first, wa.second, q);
              gs_butterfly(x1, x3, wa.first, wa.second, q);
            }
          }
        }
        lo += Forward ? 2 : -2;
        done += 2;
        continue;
      }
      const int s = lo;
      const int log_dist_rows = last_stage - s;
      for (std::size_t b = 0; b < elements / 2; ++b) {
        const std::size_t c = b & cols_mask;
        const std::size_t row = butterfly_first(b >> pass.log_cols, log_dist_rows);
        const std::size_t ex = (row << pass.log_cols) | c;
        const std::size_t ey = ex + (std::size_t{1} << (log_dist_rows + pass.log_cols));
        if (Forward) {
          const auto w = twiddle(s, row, c, true);
          ct_butterfly(tile[ex], tile[ey], w.first, w.second, q);
        } else if (s == 0) {
          gs_last_butterfly(tile[ex], tile[ey], t.n_inv(), t.last_twiddle_n_inv(), q);
        } else {
          const auto w = twiddle(s, row, c, false);
          gs_butterfly(tile[ex], tile[ey], w.first, w.second, q);
        }
      }
      lo += Forward ? 1 : -1;
      done += 1;
    }
    const bool reduce = Forward && last_stage == log_n - 1;
    for (std::size_t e = 0; e < elements; ++e) dst[pass.element(origin, e)] = reduce ? reduce_4q(tile[e], q) : tile[e];
  }
}

void replay_transform(const u64* src, const u64* src2, u64* dst, const NttTables& t, bool forward) {
  NttPass passes[8];
  const int count = plan_ntt_passes(t.log_n(), t.log_n(), passes, 8);
  for (int step = 0; step < count; ++step) {
    const NttPass& pass = passes[forward ? step : count - 1 - step];
    if (forward)
      replay_pass<true>(src, nullptr, dst, t, pass);
    else
      replay_pass<false>(src, src2, dst, t, pass);
    src = dst;
    src2 = nullptr;
  }
}

TEST_P(KernelNtt, SharedMemoryPassPlanEqualsCpuBackend) {
  const std::size_t n = std::size_t{1} << GetParam();
  const auto base = mixed_base(n);
  std::mt19937_64 rng(100 + GetParam());
  const std::vector<u64> x = random_polys(*base, 1, rng), y = random_polys(*base, 1, rng);
  std::vector<u64> want = x, got(x.size());
  cpu().ntt_forward(want.data(), 1, *base);
  for (std::size_t l = 0; l < base->size(); ++l)
    replay_transform(x.data() + l * n, nullptr, got.data() + l * n, base->ntt(l), true);  // out of place
  ASSERT_EQ(got, want);
  cpu().ntt_inverse(want.data(), 1, *base);
  for (std::size_t l = 0; l < base->size(); ++l)
    replay_transform(got.data() + l * n, nullptr, got.data() + l * n, base->ntt(l), false);
  ASSERT_EQ(got, want);
  // poly_multiply: forward both, inverse with the Hadamard product fused into its first pass.
  std::vector<u64> ta(x.size()), tb(x.size()), prod(x.size());
  for (std::size_t l = 0; l < base->size(); ++l) {
    replay_transform(x.data() + l * n, nullptr, ta.data() + l * n, base->ntt(l), true);
    replay_transform(y.data() + l * n, nullptr, tb.data() + l * n, base->ntt(l), true);
    replay_transform(ta.data() + l * n, tb.data() + l * n, prod.data() + l * n, base->ntt(l), false);
  }
  std::vector<u64> want_prod(x.size()), want_kara(x.size());
  cpu().poly_multiply(x.data(), y.data(), want_prod.data(), 1, *base, PolyMulMethod::ntt);
  cpu().poly_multiply(x.data(), y.data(), want_kara.data(), 1, *base, PolyMulMethod::karatsuba);
  EXPECT_EQ(prod, want_prod);
  EXPECT_EQ(prod, want_kara);  // why the CUDA Karatsuba may take the NTT path
}

std::string size_name(const ::testing::TestParamInfo<int>& info) {
  static const char* const names[] = {"N16",   "N32",   "N64",    "N128",   "N256",   "N512",  "N1024",
                                      "N2048", "N4096", "N8192",  "N16384", "N32768", "N65536", "N131072"};
  return names[info.param - 4];
}

INSTANTIATE_TEST_SUITE_P(Sizes, KernelNtt, ::testing::Range(4, 18), size_name);

// A block's twiddle slots hold, for every stage, row and column of the block,
// the twiddle the global index map gives that butterfly.
TEST(KernelNttPlan, TwiddleSlotsHoldEachButterflysTwiddle) {
  for (int log_n = 2; log_n <= 17; ++log_n) {
    NttPass passes[8];
    const int count = plan_ntt_passes(log_n, log_n, passes, 8);
    for (int p = 0; p < count; ++p) {
      const NttPass& pass = passes[p];
      ASSERT_LE(pass.twiddle_slots(), std::size_t{1} << kLogTile);
      for (std::size_t b = 0; b < pass.blocks(); ++b) {
        const std::size_t origin = pass.block_origin(b, log_n);
        for (int s = pass.first_stage; s < pass.first_stage + pass.stages; ++s) {
          for (std::size_t e = 0; e < pass.block_elements(); ++e) {
            const std::size_t row = e >> pass.log_cols;
            const std::size_t slot = pass.twiddle_slot(s, row);
            ASSERT_GE(slot, 1u);
            ASSERT_LT(slot, pass.twiddle_slots());
            ASSERT_EQ(pass.twiddle_slot_source(slot, origin, log_n),
                      twiddle_index(pass.element(origin, e), s, log_n))
                << "log_n " << log_n << " pass " << p << " block " << b << " stage " << s << " element " << e;
          }
        }
      }
    }
  }
}

TEST(KernelNttPlan, PassesPartitionEveryTransformAndStayCoalesced) {
  for (int log_n = 2; log_n <= 17; ++log_n) {
    NttPass passes[8];
    const int count = plan_ntt_passes(log_n, log_n, passes, 8);
    int stages = 0;
    for (int p = 0; p < count; ++p) {
      const NttPass& pass = passes[p];
      EXPECT_EQ(pass.first_stage, stages);
      stages += pass.stages;
      EXPECT_LE(pass.block_elements(), std::size_t{1} << kLogTile);
      if (p + 1 < count) {
        EXPECT_GE(pass.log_cols, kMinLogCols);  // strided head passes
      }
      // The blocks of a pass cover [0, N) exactly once.
      std::vector<int> seen(std::size_t{1} << log_n, 0);
      for (std::size_t b = 0; b < pass.blocks(); ++b) {
        const std::size_t origin = pass.block_origin(b, log_n);
        for (std::size_t e = 0; e < pass.block_elements(); ++e) ++seen[pass.element(origin, e)];
      }
      for (int v : seen) {
        ASSERT_EQ(v, 1);
      }
    }
    EXPECT_EQ(stages, log_n);
    EXPECT_LE(count, log_n <= 17 ? 2 : 8) << "N = 2^" << log_n;
  }
}

// ---------------------------------------------------------------------------
// Element-wise bodies

TEST(KernelBodies, ElementwiseBodiesEqualCpuBackend) {
  const std::size_t n = 1024;
  const auto base = mixed_base(n);
  const std::size_t limbs = base->size(), words = 2 * limbs * n;
  std::mt19937_64 rng(7);
  const std::vector<u64> a = random_polys(*base, 2, rng), b = random_polys(*base, 2, rng);
  std::vector<u64> acc = random_polys(*base, 2, rng), want = acc;
  cpu().multiply_add(a.data(), b.data(), want.data(), 2, *base);
  for (std::size_t i = 0; i < words; ++i) acc[i] = multiply_add_body(a[i], b[i], acc[i], base->modulus((i / n) % limbs));
  EXPECT_EQ(acc, want);

  std::vector<u64> scalars(limbs), got(words);
  for (std::size_t l = 0; l < limbs; ++l) scalars[l] = base->modulus(l).value() - 1 - 12345 * l;
  cpu().multiply_scalar(a.data(), scalars.data(), want.data(), 2, *base);
  for (std::size_t i = 0; i < words; ++i) {
    const u64 q = base->modulus((i / n) % limbs).value();
    got[i] = multiply_scalar_body(a[i], make_shoup(scalars[(i / n) % limbs], q), q);
  }
  EXPECT_EQ(got, want);

  // add, sub, negate and add_scalar (vectorised on AVX2 targets) against the
  // scalar definitions; zeros and q - 1 exercise every wrap.
  std::vector<u64> x = a, y = b;
  for (std::size_t i = 0; i < 64; ++i) {
    const u64 q = base->modulus((i / n) % limbs).value();
    x[i] = (i % 3 == 0) ? 0 : q - 1;
    y[i] = (i % 2 == 0) ? 0 : q - 1;
  }
  const auto check = [&](const char* name, auto&& run, auto&& body) {
    run(want.data());
    for (std::size_t i = 0; i < words; ++i) {
      const std::size_t limb = (i / n) % limbs;
      got[i] = body(i, limb, base->modulus(limb).value());
    }
    EXPECT_EQ(got, want) << name;
  };
  check("add", [&](u64* out) { cpu().add(x.data(), y.data(), out, 2, *base); },
        [&](std::size_t i, std::size_t, u64 q) { return add_mod(x[i], y[i], q); });
  check("sub", [&](u64* out) { cpu().sub(x.data(), y.data(), out, 2, *base); },
        [&](std::size_t i, std::size_t, u64 q) { return sub_mod(x[i], y[i], q); });
  check("negate", [&](u64* out) { cpu().negate(x.data(), out, 2, *base); },
        [&](std::size_t i, std::size_t, u64 q) { return neg_mod(x[i], q); });
  check("add_scalar", [&](u64* out) { cpu().add_scalar(x.data(), scalars.data(), out, 2, *base); },
        [&](std::size_t i, std::size_t limb, u64 q) { return add_mod(x[i], scalars[limb], q); });

  // Key-switching inner product over 40 triples (two lazy chunks), against
  // a plain sum of reduced products.
  const std::size_t one = limbs * n, digits = 40;
  std::vector<std::vector<u64>> polys;
  for (std::size_t t = 0; t < 3 * digits; ++t) polys.push_back(random_polys(*base, 1, rng));
  std::vector<const u64*> in, kb, ka;
  for (std::size_t t = 0; t < digits; ++t) {
    in.push_back(polys[t].data());
    kb.push_back(polys[digits + t].data());
    ka.push_back(polys[2 * digits + t].data());
  }
  std::vector<u64> got0(one), got1(one), want0(one, 0), want1(one, 0);
  cpu().inner_product_pair(in.data(), kb.data(), ka.data(), digits, got0.data(), got1.data(), *base);
  for (std::size_t i = 0; i < one; ++i) {
    const Modulus& mod = base->modulus(i / n);
    for (std::size_t t = 0; t < digits; ++t) {
      want0[i] = add_mod(want0[i], mul_mod(in[t][i], kb[t][i], mod), mod.value());
      want1[i] = add_mod(want1[i], mul_mod(in[t][i], ka[t][i], mod), mod.value());
    }
  }
  EXPECT_EQ(got0, want0);
  EXPECT_EQ(got1, want1);

  // Term counts that leave every group size (3, 2, 1) at the end of a chunk.
  for (std::size_t terms : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{34}}) {
    cpu().inner_product_pair(in.data(), kb.data(), ka.data(), terms, got0.data(), got1.data(), *base);
    for (std::size_t i = 0; i < one; ++i) {
      const Modulus& mod = base->modulus(i / n);
      u64 w0 = 0, w1 = 0;
      for (std::size_t t = 0; t < terms; ++t) {
        w0 = add_mod(w0, mul_mod(in[t][i], kb[t][i], mod), mod.value());
        w1 = add_mod(w1, mul_mod(in[t][i], ka[t][i], mod), mod.value());
      }
      ASSERT_EQ(got0[i], w0) << terms << " terms, word " << i;
      ASSERT_EQ(got1[i], w1) << terms << " terms, word " << i;
    }
  }
}

// The CUDA linear combination: chunks of 32 terms and 8 limbs, partial sums
// carried between chunks, the last chunk writing the output.
TEST(KernelBodies, ChunkedLinearCombinationEqualsCpuBackend) {
  const std::size_t n = 256, batch = 2;
  std::vector<u64> qs = find_ntt_primes(61, 5, n);
  for (u64 q : find_ntt_primes(60, 5, n)) qs.push_back(q);
  const auto base = std::make_shared<const RnsBase>(n, qs);  // 10 limbs: two limb ranges
  const std::size_t limbs = base->size(), words = batch * limbs * n;
  std::mt19937_64 rng(11);
  for (std::size_t terms : {std::size_t{1}, std::size_t{32}, std::size_t{70}}) {
    std::vector<std::vector<u64>> inputs;
    std::vector<const u64*> ptrs;
    for (std::size_t t = 0; t < terms; ++t) inputs.push_back(random_polys(*base, batch, rng));
    for (const auto& v : inputs) ptrs.push_back(v.data());
    std::vector<u64> weights(terms * limbs);
    for (std::size_t t = 0; t < terms; ++t)
      for (std::size_t l = 0; l < limbs; ++l) weights[t * limbs + l] = t % 5 == 2 ? 0 : rng() % base->modulus(l).value();
    std::vector<u64> want(words), got(words), partial(words);
    cpu().linear_combination(ptrs.data(), weights.data(), terms, want.data(), batch, *base);
    constexpr std::size_t kLimbs = 8;
    for (std::size_t l0 = 0; l0 < limbs; l0 += kLimbs)
      for (std::size_t t0 = 0; t0 < terms; t0 += kLinearCombinationChunk) {
        const std::size_t t1 = std::min(terms, t0 + kLinearCombinationChunk);
        for (std::size_t p = 0; p < batch; ++p)
          for (std::size_t l = l0; l < std::min(limbs, l0 + kLimbs); ++l)
            for (std::size_t j = 0; j < n; ++j) {
              const std::size_t i = (p * limbs + l) * n + j;
              u128 acc = 0;
              for (std::size_t t = t0; t < t1; ++t)
                if (weights[t * limbs + l] != 0) acc += mul_wide(inputs[t][i], weights[t * limbs + l]);
              u64 r = reduce_u128(acc, base->modulus(l));
              if (t0 > 0) r = add_mod(partial[i], r, base->modulus(l).value());
              (t1 == terms ? got : partial)[i] = r;
            }
      }
    EXPECT_EQ(got, want) << terms << " terms";
  }
}

// ---------------------------------------------------------------------------
// Automorphism index maps

TEST(KernelBodies, AutomorphismMapsEqualCpuBackend) {
  for (int log_n = 4; log_n <= 12; log_n += 2) {
    const std::size_t n = std::size_t{1} << log_n;
    const auto base = mixed_base(n);
    std::mt19937_64 rng(log_n);
    const std::vector<u64> x = random_polys(*base, 2, rng);
    for (u64 k : {u64{3}, u64{5}, u64{25} % (2 * n), u64{2 * n - 1}, u64{1}}) {
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(reverse_bits_hd(i, log_n), reverse_bits(i, log_n));
      }
      std::vector<u64> want(x.size()), got(x.size());
      cpu().automorphism(x.data(), want.data(), 2, *base, k, Form::coeff);
      for (std::size_t row = 0; row < 2 * base->size(); ++row) {
        const u64 q = base->modulus(row % base->size()).value();
        for (std::size_t i = 0; i < n; ++i) {
          bool negate = false;
          const std::size_t target = automorphism_coeff_target(i, k, n, negate);
          got[row * n + target] = negate ? neg_mod(x[row * n + i], q) : x[row * n + i];
        }
      }
      EXPECT_EQ(got, want) << "coeff, N = " << n << ", k = " << k;
      cpu().automorphism(x.data(), want.data(), 2, *base, k, Form::eval);
      for (std::size_t row = 0; row < 2 * base->size(); ++row)
        for (std::size_t s = 0; s < n; ++s) got[row * n + s] = x[row * n + automorphism_eval_source(s, k, log_n)];
      EXPECT_EQ(got, want) << "eval, N = " << n << ", k = " << k;
    }
  }
}

// ---------------------------------------------------------------------------
// Base conversion: the three CUDA passes, replayed.

// Coefficients 0..2 of polynomial 0 become floor(Q/2) - 1, floor(Q/2), floor(Q/2) + 1.
void plant_near_half(const RnsBase& from, std::vector<u64>& x) {
  const std::size_t len = from.size(), n = from.n();
  std::vector<u64> half(from.product());
  for (std::size_t w = 0; w < len; ++w) half[w] = (half[w] >> 1) | (w + 1 < len ? half[w + 1] << 63 : 0);
  std::vector<u64> words;
  for (int delta = -1; delta <= 1; ++delta) {
    std::vector<u64> v(half);
    if (delta < 0) {
      for (std::size_t w = 0; w < len && v[w]-- == 0; ++w) {
      }
    } else if (delta > 0) {
      for (std::size_t w = 0; w < len && ++v[w] == 0; ++w) {
      }
    }
    words.insert(words.end(), v.begin(), v.end());
  }
  std::vector<u64> residues(len * 3);
  from.decompose(words.data(), len, 3, residues.data());
  for (std::size_t l = 0; l < len; ++l)
    for (std::size_t c = 0; c < 3; ++c) x[l * n + c] = residues[l * 3 + c];
}

std::vector<u64> replay_base_convert(const std::vector<u64>& x, std::size_t batch, const BaseConverter& conv,
                                     BaseConversion kind, std::size_t& flagged_count) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  std::vector<u64> y(batch * src * n), v(batch * n), out(batch * dst * n);
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t i = 0; i < src; ++i) {
      const u64 q = from.modulus(i).value();
      const ShoupOperand inv = make_shoup(from.qhat_inverse(i), q);
      for (std::size_t c = 0; c < n; ++c) y[(p * src + i) * n + c] = base_convert_scale_body(x[(p * src + i) * n + c], inv, q);
    }
  flagged_count = 0;
  if (kind == BaseConversion::exact) {
    std::vector<u64> qhat_words(src * src), acc(src + 1);
    for (std::size_t i = 0; i < src; ++i) std::copy(from.qhat(i), from.qhat(i) + src, qhat_words.begin() + i * src);
    std::vector<std::size_t> flagged;
    for (std::size_t p = 0; p < batch; ++p)
      for (std::size_t c = 0; c < n; ++c) {
        double s = 0.0;
        for (std::size_t i = 0; i < src; ++i) s = base_convert_sum_step(s, y[(p * src + i) * n + c], conv.q_reciprocal()[i]);
        if (base_convert_near_half(s)) {
          flagged.push_back(p * n + c);
          v[p * n + c] = 0;
        } else {
          v[p * n + c] = base_convert_rounded(s);
        }
      }
    for (std::size_t f : flagged) {
      const std::size_t p = f / n, c = f % n;
      v[f] = exact_rounded_quotient(y.data() + p * src * n + c, n, qhat_words.data(), from.product().data(), src,
                                    acc.data());
    }
    flagged_count = flagged.size();
  }
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t j = 0; j < dst; ++j) {
      const Modulus& pm = to.modulus(j);
      const u64 pv = pm.value();
      const u64* factors = conv.qhat_mod_p() + j * src;
      for (std::size_t c = 0; c < n; ++c) {
        u64 r = 0;
        if (src <= kBaseConvShoupTerms) {
          for (std::size_t i = 0; i < src; ++i)
            r = base_convert_shoup_step(r, y[(p * src + i) * n + c], make_shoup(factors[i], pv), pv);
          r -= (r >= pv) ? pv : 0;
        } else {
          u128 acc = 0;
          for (std::size_t i = 0; i < src; ++i) {
            acc += mul_wide(y[(p * src + i) * n + c], factors[i]);
            if ((i + 1) % kBaseConvLazyTerms == 0) {
              r = add_mod(r, reduce_u128(acc, pm), pv);
              acc = 0;
            }
          }
          r = add_mod(r, reduce_u128(acc, pm), pv);
        }
        if (kind == BaseConversion::exact) r = base_convert_subtract_vq(r, v[p * n + c], conv.q_mod_p()[j], pm);
        out[(p * dst + j) * n + c] = r;
      }
    }
  return out;
}

TEST(KernelBodies, BaseConversionPassesEqualCpuBackend) {
  const std::size_t n = 512, batch = 2;
  const auto target = std::make_shared<const RnsBase>(n, find_ntt_primes(59, 5, n));
  for (std::size_t src : {std::size_t{1}, std::size_t{3}, std::size_t{12}}) {
    const auto from = std::make_shared<const RnsBase>(n, find_ntt_primes(src > 8 ? 50 : 61, src, n));
    const BaseConverter conv(from, target);
    std::mt19937_64 rng(src);
    std::vector<u64> x = random_polys(*from, batch, rng);
    plant_near_half(*from, x);
    for (BaseConversion kind : {BaseConversion::fast, BaseConversion::exact}) {
      std::vector<u64> want(batch * target->size() * n);
      cpu().base_convert(x.data(), want.data(), batch, conv, kind);
      std::size_t flagged = 0;
      EXPECT_EQ(replay_base_convert(x, batch, conv, kind, flagged), want) << src << " source limbs";
      // The three planted coefficients take the multiword rule.
      if (kind == BaseConversion::exact) {
        EXPECT_GE(flagged, 3u) << src << " source limbs";
      }
    }
  }
}

// The fused kernel's order (cuda/base_convert.cu, up to kBaseConvShoupTerms
// source limbs): per coefficient, y and v in registers, the multiword rule in
// place, and -vQ folded into the target's Shoup sum as one more term with the
// constant -Q mod p, where the passes subtract v (Q mod p) with a Barrett
// product. Same residue, so the same words as the CPU.
std::vector<u64> replay_fused_base_convert(const std::vector<u64>& x, std::size_t batch, const BaseConverter& conv,
                                           BaseConversion kind) {
  const RnsBase& from = conv.from();
  const RnsBase& to = conv.to();
  const std::size_t n = from.n(), src = from.size(), dst = to.size();
  std::vector<u64> qhat_words(src * src);
  for (std::size_t i = 0; i < src; ++i) std::copy(from.qhat(i), from.qhat(i) + src, qhat_words.begin() + i * src);
  std::vector<u64> out(batch * dst * n);
  for (std::size_t p = 0; p < batch; ++p)
    for (std::size_t c = 0; c < n; ++c) {
      std::vector<u64> y(src), acc(src + 1);
      double s = 0.0;
      for (std::size_t i = 0; i < src; ++i) {
        const u64 q = from.modulus(i).value();
        y[i] = base_convert_scale_body(x[(p * src + i) * n + c], make_shoup(from.qhat_inverse(i), q), q);
        s = base_convert_sum_step(s, y[i], conv.q_reciprocal()[i]);
      }
      const bool exact = kind == BaseConversion::exact;
      u64 v = 0;
      if (exact)
        v = base_convert_near_half(s)
                ? exact_rounded_quotient(y.data(), 1, qhat_words.data(), from.product().data(), src, acc.data())
                : base_convert_rounded(s);
      for (std::size_t j = 0; j < dst; ++j) {
        const u64 pv = to.modulus(j).value();
        const u64* factors = conv.qhat_mod_p() + j * src;
        u64 r = 0;
        for (std::size_t i = 0; i < src; ++i) r = base_convert_shoup_step(r, y[i], make_shoup(factors[i], pv), pv);
        if (exact) r = base_convert_shoup_step(r, v, make_shoup(neg_mod(conv.q_mod_p()[j], pv), pv), pv);
        r -= r >= pv ? pv : 0;
        out[(p * dst + j) * n + c] = r;
      }
    }
  return out;
}

TEST(KernelBodies, FusedBaseConversionEqualsCpuBackend) {
  const std::size_t n = 256, batch = 2;
  // 61-bit targets: the widest primes the library makes, the lazy sums'
  // bound (r < 4p < 2^64) with the least room.
  for (int target_bits : {59, 61}) {
    const auto target = std::make_shared<const RnsBase>(n, find_ntt_primes(target_bits, 11, n));
    for (std::size_t src : {std::size_t{1}, std::size_t{3}, std::size_t{4}, kBaseConvShoupTerms}) {
      const auto from = std::make_shared<const RnsBase>(n, find_ntt_primes(61, src, n));
      const BaseConverter conv(from, target);
      std::mt19937_64 rng(src * 100 + target_bits);
      std::vector<u64> x = random_polys(*from, batch, rng);
      plant_near_half(*from, x);
      for (BaseConversion kind : {BaseConversion::fast, BaseConversion::exact}) {
        std::vector<u64> want(batch * target->size() * n);
        cpu().base_convert(x.data(), want.data(), batch, conv, kind);
        EXPECT_EQ(replay_fused_base_convert(x, batch, conv, kind), want)
            << src << " source limbs, " << target_bits << "-bit targets";
      }
    }
  }
}

// Key switching's ModUp of several digits as the batched CUDA path runs it
// (CudaBackend::mod_up_digits): every digit converted by the fused kernel's
// order into one scratch (polynomial d = digit d), transformed by the pass
// plan, and the last pass's store placed at gapped_row with digit d's gap at
// d * alpha. Against the CPU backend's mod_up_digits (one base_convert_ntt
// per digit to explicit limb pointers).
TEST(KernelBodies, BatchedModUpEqualsCpuBackend) {
  const std::size_t n = 256;
  for (std::size_t alpha : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    // Three full digits and a shorter one (whose limbs are targets only), then P.
    std::vector<u64> moduli = find_ntt_primes(61, 3 * alpha + 1, n);
    for (u64 p : find_ntt_primes(59, 2, n)) moduli.push_back(p);
    const auto extended = std::make_shared<const RnsBase>(n, moduli);
    const std::size_t count = 3, ext = moduli.size(), dst = ext - alpha, digit_words = ext * n;
    std::vector<std::unique_ptr<BaseConverter>> owned;
    std::vector<const BaseConverter*> convs;
    for (std::size_t d = 0; d < count; ++d) {
      std::vector<std::size_t> own, rest;
      for (std::size_t i = 0; i < ext; ++i) (i >= d * alpha && i < (d + 1) * alpha ? own : rest).push_back(i);
      owned.push_back(std::make_unique<BaseConverter>(extended->select(own), extended->select(rest)));
      convs.push_back(owned.back().get());
    }
    const auto q_base = extended->select([&] {
      std::vector<std::size_t> idx(3 * alpha + 1);
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      return idx;
    }());
    std::mt19937_64 rng(700 + alpha);
    const std::vector<u64> c_coeff = random_polys(*q_base, 1, rng);
    std::vector<u64> want(count * digit_words, 0), scratch(digit_words);
    cpu().mod_up_digits(c_coeff.data(), convs.data(), count, alpha, want.data(), digit_words, scratch.data(),
                        BaseConversion::exact);
    std::vector<u64> got(count * digit_words, 0);
    for (std::size_t d = 0; d < count; ++d) {
      const std::vector<u64> digit(c_coeff.begin() + d * alpha * n, c_coeff.begin() + (d + 1) * alpha * n);
      const std::vector<u64> converted = replay_fused_base_convert(digit, 1, *convs[d], BaseConversion::exact);
      const RnsBase& to = convs[d]->to();
      for (std::size_t l = 0; l < dst; ++l) {
        std::vector<u64> limb(n);
        replay_transform(converted.data() + l * n, nullptr, limb.data(), to.ntt(l), true);
        const std::size_t row = gapped_row(d, l, dst, 0, alpha, alpha);
        std::copy(limb.begin(), limb.end(), got.begin() + row * n);
      }
    }
    EXPECT_EQ(got, want) << "alpha " << alpha;
  }
}

// The exact conversion's meaning, independent of the CPU: the centered
// representative of x = floor(Q/2) + d, i.e. x mod p for d <= 0 and
// (x - Q) mod p for d = 1 (Q is odd), with v from the multiword rule.
TEST(KernelBodies, ExactConversionCentersAroundTheHalf) {
  const std::size_t n = 16;
  const auto target = std::make_shared<const RnsBase>(n, find_ntt_primes(59, 2, n));
  for (std::size_t len : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{7}, std::size_t{10}}) {
    const auto from = std::make_shared<const RnsBase>(n, find_ntt_primes(61, len, n));
    const BaseConverter conv(from, target);
    std::vector<u64> x(len * n, 0);
    plant_near_half(*from, x);
    std::size_t flagged = 0;
    const std::vector<u64> out = replay_base_convert(x, 1, conv, BaseConversion::exact, flagged);
    EXPECT_EQ(flagged, 3u);
    std::vector<u64> half(from->product());
    for (std::size_t w = 0; w < len; ++w) half[w] = (half[w] >> 1) | (w + 1 < len ? half[w + 1] << 63 : 0);
    for (std::size_t j = 0; j < target->size(); ++j) {
      const Modulus& p = target->modulus(j);
      const u64 h = multiword::mod_modulus(half.data(), len, p);
      const u64 expect[3] = {sub_mod(h, 1, p.value()), h, sub_mod(add_mod(h, 1, p.value()), conv.q_mod_p()[j], p.value())};
      for (std::size_t c = 0; c < 3; ++c) {
        EXPECT_EQ(out[j * n + c], expect[c]) << "len " << len << ", d = " << c;
      }
      EXPECT_EQ(out[j * n + 5], 0u);  // x = 0 stays 0
    }
  }
}

}  // namespace
}  // namespace ringfire
