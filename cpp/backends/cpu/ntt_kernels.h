// Single-limb negacyclic NTT kernels for the CPU (Harvey lazy butterflies
// with Shoup twiddles). Each transforms one polynomial of N words in place.
#pragma once

#include "ringfire/ring/ntt_tables.h"

namespace ringfire::cpu {

// Merged Cooley-Tukey forward NTT (seed 002 Alg. 5). Input < q, output < q,
// bit-reversed order.
void ntt_forward_limb(u64* a, const NttTables& tables);

// Alg. 5 without its last stage (seed 002's truncated CT NTT); output < q.
void ntt_forward_truncated_limb(u64* a, const NttTables& tables);

// Merged Gentleman-Sande inverse NTT (Alg. 6) with 1/N folded into the last
// stage. Input < 2q in bit-reversed order, output < q in normal order.
void ntt_inverse_limb(u64* a, const NttTables& tables);

// Alg. 6 without its first stage, scaled by (N/2)^-1 (Alg. 8's inverse).
void ntt_inverse_truncated_limb(u64* a, const NttTables& tables);

// The same four on AVX-512 (ntt_kernels_avx512.cpp): only where the CPU has
// it (rns_isa.h) and the tables fit, i.e. N >= 64 (and q < 2^61, as here);
// IFMA's 52-bit products below 2^50 (avx512_modular.h). The four above take
// them by themselves where rns_isa() says avx512.
inline constexpr std::size_t kNttAvx512MinDegree = 64;
inline constexpr u64 kNttAvx512Bound = u64{1} << 61;
bool ntt_avx512_fits(const NttTables& tables);
void ntt_forward_limb_avx512(u64* a, const NttTables& tables);
void ntt_forward_truncated_limb_avx512(u64* a, const NttTables& tables);
void ntt_inverse_limb_avx512(u64* a, const NttTables& tables);
void ntt_inverse_truncated_limb_avx512(u64* a, const NttTables& tables);

}  // namespace ringfire::cpu
