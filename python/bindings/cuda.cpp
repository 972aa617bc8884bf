// ringfire._core CUDA helpers: the backend self-test and kernel timing. Plain C++: the test
// itself lives with the CUDA backend (cpp/backends/cuda/selftest.h), and
// builds without CUDA link a stand-in that raises NotSupported.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "backends/cuda/bench.h"
#include "backends/cuda/runtime.h"
#include "backends/cuda/selftest.h"
#include "common.h"

namespace ringfire::python {

void bind_cuda(nb::module_& m) {
  m.def("cuda_create_stream", [](int device) { return static_cast<std::uint64_t>(cuda::create_stream(device)); },
        nb::arg("device") = 0, "A new non-blocking CUDA stream on `device`, as a queue handle.");
  m.def(
      "cuda_destroy_stream",
      [](int device, std::uint64_t stream) {
        nb::gil_scoped_release release;
        cuda::destroy_stream(device, stream);
      },
      nb::arg("device"), nb::arg("stream"), "Waits for the stream's work and destroys it.");
  m.def("cuda_start_profiling", &cuda::start_profiling, nb::arg("device") = 0,
        "Times every kernel launched on `device` from now on with CUDA events.");
  m.def(
      "cuda_stop_profiling",
      [](int device) {
        std::vector<cuda::KernelRecord> records;
        {
          nb::gil_scoped_release release;
          records = cuda::stop_profiling(device);
        }
        nb::list out;
        for (const auto& r : records) out.append(nb::make_tuple(r.kernel, r.op, r.seconds));
        return out;
      },
      nb::arg("device") = 0, "Synchronises and returns [(kernel, operation, seconds)] since cuda_start_profiling.");
  m.def("cuda_set_sync_each_kernel", &cuda::set_sync_each_kernel, nb::arg("device"), nb::arg("on"),
        "Debug mode: synchronise after every kernel (also RINGFIRE_CUDA_SYNC=1).");
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
  m.def(
      "cuda_time_kernel",
      [](const std::string& op, std::size_t n, std::size_t limbs, int bits, const std::string& kernel, int rounds,
         int calls, int device, std::size_t batch) {
        cuda::KernelTiming t;
        {
          nb::gil_scoped_release release;
          t = cuda::time_kernel(op, n, limbs, bits, kernel, rounds, calls, device, batch);
        }
        nb::dict out;
        out["median_s"] = t.median_seconds;
        out["min_s"] = t.min_seconds;
        out["buffers"] = t.buffers;
        return out;
      },
      nb::arg("op"), nb::arg("n"), nb::arg("limbs"), nb::arg("bits") = 60, nb::arg("kernel") = "shared",
      nb::arg("rounds") = 20, nb::arg("calls") = 20, nb::arg("device") = 0, nb::arg("batch") = 1,
      "Seconds per call of a CUDA kernel (op: ntt_forward, ntt_inverse, poly_multiply; kernel: shared, "
      "shared_poly (a batch polynomial-major), generic or radix2) on `batch` polynomials "
      "of `limbs` limbs, timed with CUDA events over `calls` back-to-back launches per round, rotating over "
      "enough buffers to defeat L2. Returns {median_s, min_s, buffers}. NotImplementedError without a GPU.");
}

}  // namespace ringfire::python
