// ringfire._core CUDA helpers: the backend self-test. Plain C++: the test
// itself lives with the CUDA backend (cpp/backends/cuda/selftest.h), and
// builds without CUDA link a stand-in that raises NotSupported.
#include <nanobind/stl/string.h>

#include "../../cpp/backends/cuda/selftest.h"
#include "common.h"

namespace ringfire::python {

void bind_cuda(nb::module_& m) {
  m.def(
      "cuda_selftest",
      [](std::size_t n, std::size_t limbs, std::uint64_t seed) {
        nb::dict results;
        for (const auto& [method, same] : cuda::selftest(n, limbs, seed)) results[method.c_str()] = same;
        return results;
      },
      nb::arg("n"), nb::arg("limbs") = 4, nb::arg("seed") = 0,
      "Runs every backend method on random inputs (seeded) on the CPU and CUDA backends and returns "
      "{method: bit_identical}. n: a power of two in [16, 2^17]; limbs: 1..32. Raises NotImplementedError "
      "without a GPU or without the CUDA backend, ValueError for bad sizes.");
}

}  // namespace ringfire::python
