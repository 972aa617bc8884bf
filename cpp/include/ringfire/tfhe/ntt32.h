// The negacyclic NTT on 32-bit words for the blind rotation: one prime
// q < 2^29 (the gate-bootstrapping rings, N = 2^6 ... 2^13), AVX2 lanes of
// eight words where the target has them.
//
// Why a second NTT beside ring/ntt_tables.h: the blind rotation's ring is one
// small prime, and its speed is eight 32-bit lanes per vector instead of four
// 64-bit ones (OpenFHE's binfhe measured the same: its blind rotation is 2x
// faster in 32-bit words). The evaluation form is private to this layer —
// only products of two transforms and the inverse read it — so its order is
// chosen for the lanes:
//
//   evaluation layout: slot 64 b + 8 j + k holds the value the merged
//   Cooley-Tukey NTT (seed 002 Alg. 5, bit-reversed output) puts at index
//   64 b + 8 k + j,
//
// i.e. each block of 64 values is an 8 x 8 transpose of Alg. 5's order: its
// last three stages run on the transposed block, and the transform never
// transposes back. The scalar path writes the same layout, so results are
// bit-identical with and without AVX2 (and on any later device backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringfire/base/cache_aligned.h"
#include "ringfire/tfhe/isa.h"

namespace ringfire::tfhe {

using u32 = std::uint32_t;

class Ntt32 {
 public:
  // Raises InvalidArgument unless N is a power of two in [64, 2^13] and q is
  // a prime < 2^29 with q = 1 mod 2N, or when `isa` cannot run here. The
  // AVX-512 path transforms two blocks of 64 at a time: N = 64 runs AVX2.
  Ntt32(std::size_t n, u32 q, Isa isa = default_isa());

  std::size_t n() const { return n_; }
  Isa isa() const { return isa_; }
  u32 modulus() const { return q_; }

  // Coefficients (< q) -> evaluation layout, values < q.
  void forward(u32* a) const;
  // Evaluation layout (values < 2q) -> coefficients < q, scaled by 1/N.
  // With accumulate, the result is added to accumulate (mod q) instead,
  // and a is left in an unspecified state.
  void inverse(u32* a, u32* accumulate = nullptr) const;

  // The same transforms in plain C++ (the reference the vector path is
  // tested against; used where the target has no AVX2).
  void forward_scalar(u32* a) const;
  void inverse_scalar(u32* a, u32* accumulate = nullptr) const;

  // Montgomery arithmetic with R = 2^32, which the products in the
  // evaluation form use: to_montgomery(x) = x R mod q; reduce(T) = T / R mod
  // q in [0, 2q) for T < q 2^32.
  u32 to_montgomery(u32 x) const;
  u32 neg_q_inverse() const { return neg_q_inv_; }  // -q^-1 mod 2^32
  static u32 montgomery_reduce(std::uint64_t t, u32 q, u32 neg_q_inv) {
    const u32 m = static_cast<u32>(t) * neg_q_inv;
    return static_cast<u32>((t + static_cast<std::uint64_t>(m) * q) >> 32);
  }

 private:
  void forward_avx2(u32* a) const;
  void inverse_avx2(u32* a, u32* accumulate) const;
  void forward_avx512(u32* a) const;
  void inverse_avx512(u32* a, u32* accumulate) const;

  std::size_t n_;
  Isa isa_;
  int log_n_;
  u32 q_, neg_q_inv_, r2_;  // r2 = 2^64 mod q
  // psi^br(i) and psi^-br(i) (i in [0, N)) with Shoup constants floor(w 2^32 / q).
  CacheAlignedVector<u32> fwd_, fwd_shoup_, inv_, inv_shoup_;
  // The last stage of the inverse with 1/N folded in.
  u32 n_inv_, n_inv_shoup_, last_n_inv_, last_n_inv_shoup_;
  // Per-lane twiddles of the three in-block stages (t = 4, 2, 1), for
  // block b lane k: stage t=4: [b*8+k]; t=2: pair p in {0,1}: [(b*2+p)*8+k];
  // t=1: pair p in {0..3}: [(b*4+p)*8+k]. Forward and inverse.
  CacheAlignedVector<u32> f4_, f4s_, f2_, f2s_, f1_, f1s_;
  CacheAlignedVector<u32> i4_, i4s_, i2_, i2s_, i1_, i1s_;
};

}  // namespace ringfire::tfhe
