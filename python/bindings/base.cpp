// Bindings of the base layer: threads, memory pool, devices.
#include <nanobind/stl/string.h>

#include "common.h"
#include "ringfire/base/device.h"
#include "ringfire/base/memory_pool.h"
#include "ringfire/base/parallel.h"
#include "ringfire/base/queue.h"
#include "ringfire/ring/backend.h"
#include "backends/cpu/rns_isa.h"
#include "backends/cuda/cuda_info.h"

namespace ringfire::python {

namespace {

nb::dict stats_dict(const PoolStats& s) {
  nb::dict d;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["bytes_in_use"] = s.bytes_in_use;
  d["bytes_cached"] = s.bytes_cached;
  d["bytes_retained"] = s.bytes_retained;
  d["open_frames"] = s.open_frames;
  d["peak_bytes_in_use"] = s.peak_bytes_in_use;
  d["peak_bytes_held"] = s.peak_bytes_held;
  return d;
}

// Waits for all work on `device` (GIL released), then runs `then(pool)`.
template <class Then>
void after_sync(const std::string& device, Then then) {
  const Device d = Device::parse(device);
  nb::gil_scoped_release release;
  backend_for(d).synchronize();
  then(pool_for(d));
}

}  // namespace

void bind_base(nb::module_& m) {
  m.def("num_threads", &num_threads, "Threads the CPU kernels use.");
  m.def("set_num_threads", &set_num_threads, nb::arg("n"), "Sets the threads the CPU kernels use (n >= 1).");
  m.def("rns_isa", []() { return cpu::rns_isa_name(cpu::rns_isa()); },
        "The instructions the CPU's RNS kernels (NTTs, products, base conversions) run on.");
  m.def("rns_avx512_available", &cpu::rns_avx512_available, "Whether this CPU has AVX-512 F, DQ, VL and IFMA.");
  m.def("set_rns_isa", [](const std::string& name) { cpu::set_rns_isa(cpu::parse_rns_isa(name)); }, nb::arg("name"),
        "Sets the RNS kernels' instructions: 'avx512' (needs AVX-512 IFMA) or 'avx2'.");
  m.def("host_pool_stats", []() { return stats_dict(host_pool().stats()); }, "Statistics of the host memory pool.");
  m.def("host_pool_reset_peaks", []() { host_pool().reset_peaks(); },
        "The host pool's peaks start again from its counts now.");
  m.def("host_pool_flush", []() { host_pool().flush(); }, "Returns cached host blocks to the system.");
  m.def("host_pool_set_cache_limit", [](std::size_t bytes) { host_pool().set_cache_limit(bytes); }, nb::arg("bytes"),
        "At most this many bytes of released host blocks stay cached (SIZE_MAX: no limit).");
  m.def("host_pool_cache_limit", []() { return host_pool().cache_limit(); }, "The host pool's cache limit in bytes.");
  m.def("start_host_spill", &start_host_spill, nb::arg("ram_limit_bytes"), nb::arg("directory"),
        "Host blocks beyond ram_limit_bytes of resident pool memory come from files in directory.");
  m.def("stop_host_spill", &stop_host_spill, "Later host blocks come from RAM again.");
  m.def("begin_cold_host_allocations", &begin_cold_host_allocations,
        "Opens a scope whose new host blocks go to the spill files first (see memory_pool.h).");
  m.def("end_cold_host_allocations", &end_cold_host_allocations, "Closes a cold-allocation scope.");
  m.def(
      "host_spill_stats",
      []() {
        const HostSpillStats s = host_spill_stats();
        nb::dict d;
        d["active"] = s.active;
        d["ram_limit"] = s.ram_limit;
        d["directory"] = s.directory;
        d["bytes_resident"] = s.bytes_resident;
        d["bytes_spilled"] = s.bytes_spilled;
        d["bytes_mapped"] = s.bytes_mapped;
        return d;
      },
      "Where the host pool's blocks live: RAM and spill files.");
  m.def(
      "pool_stats", [](const std::string& device) { return stats_dict(pool_for(Device::parse(device)).stats()); },
      nb::arg("device"), "Statistics of a device's caching memory pool.");
  m.def(
      "pool_flush", [](const std::string& device) { after_sync(device, [](MemoryPool& pool) { pool.flush(); }); },
      nb::arg("device"), "Waits for the device, then returns its cached blocks to the system.");
  m.def(
      "synchronize", [](const std::string& device) { after_sync(device, [](MemoryPool&) {}); }, nb::arg("device"),
      "Blocks until all work issued to the device has finished.");
  m.def(
      "frame_begin", [](const std::string& device) { pool_for(Device::parse(device)).begin_frame(); },
      nb::arg("device"), "Opens a compute frame on the device (see ComputeFrame).");
  m.def(
      "frame_end", [](const std::string& device) { after_sync(device, [](MemoryPool& pool) { pool.end_frame(); }); },
      nb::arg("device"), "Synchronises the device and closes a compute frame.");
  m.def(
      "exchange_current_queue", [](std::uint64_t queue) { return exchange_current_queue(queue); }, nb::arg("queue"),
      "Makes `queue` the calling thread's current queue and returns the previous one.");
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
