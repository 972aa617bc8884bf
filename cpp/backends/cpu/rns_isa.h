// Which vector instructions the RNS kernels (the NTTs of CKKS, BGV and BFV)
// run on. AVX-512 with IFMA where the CPU has it, for primes below 2^50 and
// rings of degree 64 or more (ntt_kernels_avx512.cpp); the AVX2 kernels
// otherwise. RINGFIRE_RNS_ISA=avx2 keeps the AVX2 kernels on such a CPU (to
// compare the two); set_rns_isa does the same within a process. Both give the
// same words: the transforms' outputs are fully reduced.
#pragma once

#include <string>

namespace ringfire::cpu {

enum class RnsIsa { avx2, avx512 };

// Whether this CPU has AVX-512 F, DQ, VL and IFMA.
bool rns_avx512_available();

// The kernels new transforms use: RINGFIRE_RNS_ISA when set, else the best.
RnsIsa rns_isa();

// Throws InvalidArgument for avx512 on a CPU without it.
void set_rns_isa(RnsIsa isa);

// "avx512", "avx2" ("scalar" for avx2 in a build without AVX2).
std::string rns_isa_name(RnsIsa isa);
RnsIsa parse_rns_isa(const std::string& name);

}  // namespace ringfire::cpu
