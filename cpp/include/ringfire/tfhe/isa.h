// Which vector instructions the blind rotation's kernels use: AVX2 where
// the build targets it (x86-64-v3, the default), else plain C++. Both paths
// compute bit-identical results (the same evaluation layout, the same exact
// arithmetic); the scalar one is the tests' reference and can be chosen in
// any build.
//
// AVX-512 versions of the NTT and the step were written and measured on the
// development Xeon (BENCHMARKS.md, "FHEW/TFHE"): no faster than AVX2, as its
// 512-bit integer multiplies issue at half the rate, so they are not kept.
#pragma once

#include <string>

namespace ringfire::tfhe {

enum class Isa { scalar = 0, avx2 = 1 };

// The best path this build and CPU can run.
Isa best_isa();
// The path new NTTs and bootstrappers use: RINGFIRE_TFHE_ISA (scalar, avx2)
// when set, else best_isa(); set_default_isa overrides both.
Isa default_isa();
// Raises InvalidArgument when the path cannot run here.
void set_default_isa(Isa isa);
std::string isa_name(Isa isa);
// Parses "scalar", "avx2"; raises InvalidArgument otherwise.
Isa parse_isa(const std::string& name);
// Raises InvalidArgument naming the path when this CPU or build cannot run it.
void check_isa(Isa isa);

}  // namespace ringfire::tfhe
