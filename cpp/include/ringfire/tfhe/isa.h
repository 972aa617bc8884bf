// Which vector instructions the blind rotation's kernels use: the 32-bit
// engine's NTTs and products, and the torus engine's FFT, key products and key
// switch (negacyclic_fft_avx512.cpp, torus_kernels_avx512.cpp).
//
// The library is built for a baseline CPU (x86-64-v3, AVX2: see the top
// CMakeLists), so a built wheel runs anywhere; the AVX-512 kernels are
// compiled beside it with per-function targets and chosen at run time when
// the CPU has AVX-512 F/BW/DQ/VL (on the development Xeon they make a
// bootstrap about 20 % faster: BENCHMARKS.md, "FHEW/TFHE"). Every path
// computes bit-identical results (the same evaluation layout, the same exact
// arithmetic), which the tests check against the scalar reference.
#pragma once

#include <string>

namespace ringfire::tfhe {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

// The best path this build and CPU can run.
Isa best_isa();
// The path new NTTs and bootstrappers use: RINGFIRE_TFHE_ISA (scalar, avx2,
// avx512) when set, else best_isa(); set_default_isa overrides both.
Isa default_isa();
// Raises InvalidArgument when the path cannot run here.
void set_default_isa(Isa isa);
std::string isa_name(Isa isa);
// Parses "scalar", "avx2", "avx512"; raises InvalidArgument otherwise.
Isa parse_isa(const std::string& name);
// Raises InvalidArgument naming the path when this CPU or build cannot run it.
void check_isa(Isa isa);

}  // namespace ringfire::tfhe
