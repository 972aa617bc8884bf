// Scalar and AVX2 bodies of a blind-rotation step (blind_rotation_kernels.h).
#include "blind_rotation_kernels.h"

#if defined(__AVX2__)
#include <immintrin.h>
#define RF_TFHE_AVX2 1
#else
#define RF_TFHE_AVX2 0
#endif

namespace ringfire::tfhe::kernels {

using u64 = std::uint64_t;

void decompose(Isa isa, const u32* poly, std::size_t N, const Params& p, u32* D) {
  switch (isa) {
    case Isa::avx512: return decompose_avx512(poly, N, p, D);
    case Isa::avx2: return decompose_avx2(poly, N, p, D);
    case Isa::scalar: return decompose_scalar(poly, N, p, D);
  }
}

void product(Isa isa, const ProductArgs& args) {
  switch (isa) {
    case Isa::avx512: return product_avx512(args);
    case Isa::avx2: return product_avx2(args);
    case Isa::scalar: return product_scalar(args);
  }
}

void mac(Isa isa, const MacArgs& args) {
  // AVX-512 machines run the AVX2 body: the key switches are a small share of LMKCDEY's time.
  if (isa == Isa::scalar) return mac_scalar(args);
  mac_avx2(args);
}

// Signed base-2^log_base digits of round(centred(v) / 2^skip): digit j is
// ((x + B/2) mod B) - B/2 of what the digits below it left; the last digit
// takes the rest (|it| < B when the gadget just covers Q, Params::validate;
// the noise model counts its wider range).
void decompose_scalar(const u32* poly, std::size_t N, const Params& p, u32* D) {
  const u32 Q = p.ring_modulus, half_q = Q / 2;
  const int skip = static_cast<int>(p.gadget_skip_bits), lb = static_cast<int>(p.gadget_base_log);
  const std::int32_t round = skip > 0 ? (1 << (skip - 1)) : 0;
  const std::int32_t base = 1 << lb, mask = base - 1, half = base / 2;
  const unsigned dg = p.gadget_digits;
  for (std::size_t c = 0; c < N; ++c) {
    const u32 v = poly[c];
    std::int32_t x = static_cast<std::int32_t>(v > half_q ? v - Q : v);  // wraps to the centred value
    x = (x + round) >> skip;
    for (unsigned j = 0; j + 1 < dg; ++j) {
      const std::int32_t d = ((x + half) & mask) - half;
      x = (x - d) >> lb;
      D[j * N + c] = static_cast<u32>(d) + (d < 0 ? Q : 0);
    }
    D[(dg - 1) * N + c] = static_cast<u32>(x) + (x < 0 ? Q : 0);
  }
}

void product_scalar(const ProductArgs& g) {
  const std::size_t R = g.R;
  for (std::size_t c = g.chunk_begin; c < g.chunk_end; ++c) {
    const u32* kc = g.key + c * R * 4 * kChunk;
    for (std::size_t l = 0; l < kChunk; ++l) {
      const std::size_t slot = kChunk * c + l;
      u64 acc[4] = {0, 0, 0, 0};
      for (std::size_t r = 0; r < R; ++r) {
        const u64 d = g.D[r * g.N + slot];
        for (std::size_t k = 0; k < 4; ++k) acc[k] += d * kc[(r * 4 + k) * kChunk + l];
      }
      u32 S[4];
      for (std::size_t k = 0; k < 4; ++k) S[k] = Ntt32::montgomery_reduce(acc[k], g.Q, g.neg_q_inv);
      g.out_b[slot] = Ntt32::montgomery_reduce(u64{S[0]} * g.mp[slot] + u64{S[2]} * g.mm[slot], g.Q, g.neg_q_inv);
      g.out_a[slot] = Ntt32::montgomery_reduce(u64{S[1]} * g.mp[slot] + u64{S[3]} * g.mm[slot], g.Q, g.neg_q_inv);
    }
  }
}

void mac_scalar(const MacArgs& g) {
  for (std::size_t c = 0; c < g.N / kChunk; ++c) {
    const u32* kc = g.key + c * g.R * 2 * kChunk;
    for (std::size_t l = 0; l < kChunk; ++l) {
      const std::size_t slot = kChunk * c + l;
      u64 b = 0, a = 0;
      for (std::size_t r = 0; r < g.R; ++r) {
        const u64 d = g.D[r * g.N + slot];
        b += d * kc[(r * 2) * kChunk + l];
        a += d * kc[(r * 2 + 1) * kChunk + l];
      }
      g.out_b[slot] = Ntt32::montgomery_reduce(b, g.Q, g.neg_q_inv);
      g.out_a[slot] = Ntt32::montgomery_reduce(a, g.Q, g.neg_q_inv);
    }
  }
}

#if RF_TFHE_AVX2

void decompose_avx2(const u32* poly, std::size_t N, const Params& p, u32* D) {
  const __m256i Q = _mm256_set1_epi32(static_cast<int>(p.ring_modulus));
  const __m256i half_q = _mm256_set1_epi32(static_cast<int>(p.ring_modulus / 2));
  const int skip = static_cast<int>(p.gadget_skip_bits), lb = static_cast<int>(p.gadget_base_log);
  const __m256i round = _mm256_set1_epi32(skip > 0 ? (1 << (skip - 1)) : 0);
  const __m256i mask = _mm256_set1_epi32((1 << lb) - 1), half = _mm256_set1_epi32(1 << (lb - 1));
  const __m128i skip_count = _mm_cvtsi32_si128(skip), lb_count = _mm_cvtsi32_si128(lb);
  const __m256i zero = _mm256_setzero_si256();
  const unsigned dg = p.gadget_digits;
  auto modq = [&](__m256i d) { return _mm256_add_epi32(d, _mm256_and_si256(_mm256_cmpgt_epi32(zero, d), Q)); };
  for (std::size_t c = 0; c < N; c += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(poly + c));
    __m256i x = _mm256_sub_epi32(v, _mm256_and_si256(_mm256_cmpgt_epi32(v, half_q), Q));
    x = _mm256_sra_epi32(_mm256_add_epi32(x, round), skip_count);
    for (unsigned j = 0; j + 1 < dg; ++j) {
      const __m256i d = _mm256_sub_epi32(_mm256_and_si256(_mm256_add_epi32(x, half), mask), half);
      x = _mm256_sra_epi32(_mm256_sub_epi32(x, d), lb_count);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + j * N + c), modq(d));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + (dg - 1) * N + c), modq(x));
  }
}

namespace {
using V = __m256i;
inline V load(const u32* p) { return _mm256_loadu_si256(reinterpret_cast<const V*>(p)); }
inline void store(u32* p, V v) { _mm256_storeu_si256(reinterpret_cast<V*>(p), v); }
// The odd lanes in even positions (a shuffle: port 5, not the multipliers').
inline V odd(V x) { return _mm256_shuffle_epi32(x, 0xF5); }
// Montgomery reduction of the even- and odd-lane 64-bit sums, packed back
// into eight 32-bit lanes in [0, 2Q).
inline V reduce_pack(V even, V odd_lanes, V q, V nqinv) {
  const V te = _mm256_srli_epi64(_mm256_add_epi64(even, _mm256_mul_epu32(_mm256_mul_epu32(even, nqinv), q)), 32);
  const V to = _mm256_add_epi64(odd_lanes, _mm256_mul_epu32(_mm256_mul_epu32(odd_lanes, nqinv), q));
  return _mm256_blend_epi32(te, to, 0xAA);  // the odd sums' results sit in their high halves
}
}  // namespace

void product_avx2(const ProductArgs& g) {
  const V q = _mm256_set1_epi32(static_cast<int>(g.Q)), ni = _mm256_set1_epi32(static_cast<int>(g.neg_q_inv));
  const std::size_t R = g.R, N = g.N;
  for (std::size_t c = g.chunk_begin; c < g.chunk_end; ++c) {
    const u32* kc = g.key + c * R * 4 * kChunk;
    prefetch_next(g, c);
    for (std::size_t h = 0; h < kChunk; h += 8) {
      const std::size_t slot = kChunk * c + h;
      V ae[4], ao[4];
      for (int k = 0; k < 4; ++k) ae[k] = ao[k] = _mm256_setzero_si256();
      for (std::size_t r = 0; r < R; ++r) {
        const V d = load(g.D + r * N + slot), d_odd = odd(d);
        for (int k = 0; k < 4; ++k) {
          const V kv = load(kc + (r * 4 + k) * kChunk + h);
          ae[k] = _mm256_add_epi64(ae[k], _mm256_mul_epu32(d, kv));
          ao[k] = _mm256_add_epi64(ao[k], _mm256_mul_epu32(d_odd, odd(kv)));
        }
      }
      V S[4];
      for (int k = 0; k < 4; ++k) S[k] = reduce_pack(ae[k], ao[k], q, ni);
      const V vp = load(g.mp + slot), vm = load(g.mm + slot), vp_odd = odd(vp), vm_odd = odd(vm);
      for (int o = 0; o < 2; ++o) {  // o = 0: b (S0, S2), o = 1: a (S1, S3)
        const V plus = S[o], minus = S[o + 2];
        const V even = _mm256_add_epi64(_mm256_mul_epu32(plus, vp), _mm256_mul_epu32(minus, vm));
        const V odds = _mm256_add_epi64(_mm256_mul_epu32(odd(plus), vp_odd), _mm256_mul_epu32(odd(minus), vm_odd));
        store((o == 0 ? g.out_b : g.out_a) + slot, reduce_pack(even, odds, q, ni));
      }
    }
  }
}

void mac_avx2(const MacArgs& g) {
  const V q = _mm256_set1_epi32(static_cast<int>(g.Q)), ni = _mm256_set1_epi32(static_cast<int>(g.neg_q_inv));
  const std::size_t R = g.R, N = g.N;
  for (std::size_t c = 0; c < N / kChunk; ++c) {
    const u32* kc = g.key + c * R * 2 * kChunk;
#if defined(__x86_64__)
    if (g.next_key != nullptr) {  // chunk c of the next key into L2, as prefetch_next does for GINX
      const std::size_t bytes = R * 2 * kChunk * sizeof(u32);
      for (std::size_t off = 0; off < bytes; off += 64) _mm_prefetch(g.next_key + c * bytes + off, _MM_HINT_T1);
    }
#endif
    for (std::size_t h = 0; h < kChunk; h += 8) {
      const std::size_t slot = kChunk * c + h;
      V be = _mm256_setzero_si256(), bo = be, ae = be, ao = be;
      for (std::size_t r = 0; r < R; ++r) {
        const V d = load(g.D + r * N + slot), d_odd = odd(d);
        const V kb = load(kc + (r * 2) * kChunk + h), ka = load(kc + (r * 2 + 1) * kChunk + h);
        be = _mm256_add_epi64(be, _mm256_mul_epu32(d, kb));
        bo = _mm256_add_epi64(bo, _mm256_mul_epu32(d_odd, odd(kb)));
        ae = _mm256_add_epi64(ae, _mm256_mul_epu32(d, ka));
        ao = _mm256_add_epi64(ao, _mm256_mul_epu32(d_odd, odd(ka)));
      }
      store(g.out_b + slot, reduce_pack(be, bo, q, ni));
      store(g.out_a + slot, reduce_pack(ae, ao, q, ni));
    }
  }
}

#else

void decompose_avx2(const u32* poly, std::size_t N, const Params& p, u32* D) { decompose_scalar(poly, N, p, D); }
void product_avx2(const ProductArgs& args) { product_scalar(args); }
void mac_avx2(const MacArgs& args) { mac_scalar(args); }

#endif

}  // namespace ringfire::tfhe::kernels
