// Bindings of the base layer: threads, memory pool, devices.
#include <nanobind/stl/string.h>

#include "common.h"
#include "ringfire/base/device.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/parallel.h"
#include "ringfire/ring/cuda_info.h"

namespace ringfire::python {

void bind_base(nb::module_& m) {
  m.def("num_threads", &num_threads, "Threads the CPU kernels use.");
  m.def("set_num_threads", &set_num_threads, nb::arg("n"), "Sets the threads the CPU kernels use (n >= 1).");
  m.def(
      "host_pool_stats",
      []() {
        const PoolStats s = host_pool().stats();
        nb::dict d;
        d["hits"] = s.hits;
        d["misses"] = s.misses;
        d["bytes_in_use"] = s.bytes_in_use;
        d["bytes_cached"] = s.bytes_cached;
        return d;
      },
      "Statistics of the host memory pool.");
  m.def("host_pool_flush", []() { host_pool().flush(); }, "Returns cached host blocks to the system.");
  m.def(
      "parse_device", [](const std::string& text) { return Device::parse(text).str(); }, nb::arg("device"),
      "Canonical name of a device string ('cpu', 'cuda', 'cuda:N').");
  m.def("cuda_compiled", &cuda_compiled, "Whether the CUDA backend target is part of this build.");
  m.def("cuda_device_count", &cuda_device_count, "CUDA devices visible at run time.");
  m.def(
      "cuda_mul_mod",
      [](ConstU64Array a, ConstU64Array b, U64Array out, u64 q) {
        require(a.size() == b.size() && a.size() == out.size(), "cuda.mul_mod", "arrays differ in length");
        nb::gil_scoped_release release;
        return cuda_mul_mod(a.data(), b.data(), out.data(), a.size(), q);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("q"),
      "GPU smoke test of the shared RF_HD mul_mod; returns False when no GPU is usable.");
}

}  // namespace ringfire::python
