// Tracing: while a trace is open, every Backend call on every device is
// counted — kernel, ring size, limbs, bytes moved — under the operation label
// (base/op_label.h) it serves, so a real run says what it asked of the
// hardware. The counts are aggregated (one entry per distinct call shape), so
// a trace of a long run stays small. A dry-run trace records the same calls
// and runs none of them: the values it computes are meaningless, its counts
// are those of the real run (the control flow never depends on the data).
//
// Each entry also sums the wall time spent inside its calls, so a trace is a
// per-kernel profile too.
//
// One trace at a time per process; calls from every thread are counted.
// Provided by the backends target (backends/trace).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringfire {

struct TraceEntry {
  std::string kernel;       // the Backend method: "ntt_forward", "multiply", ...
  std::string label;        // the outermost OpLabel ("" outside any operation)
  std::string device;       // the device kind: "cpu", "cuda", ...
  std::uint32_t n = 0;      // ring size (0 for copy and zero)
  std::uint32_t limbs = 0;  // limbs of the base operated on (the target base of a conversion)
  std::uint32_t source_limbs = 0;  // base conversions: limbs converted from
  std::uint32_t terms = 0;         // inner products and linear combinations: terms summed
  std::uint64_t calls = 0;
  std::uint64_t polys = 0;          // polynomials over all calls (the sum of `batch`)
  std::uint64_t words = 0;          // copy and zero: 64-bit words moved or cleared
  std::uint64_t bytes_read = 0;     // operand bytes each call reads (no tables, no twiddles)
  std::uint64_t bytes_written = 0;  // result bytes
  // Wall time inside the calls, summed over them (calls on several threads at
  // once add up); 0 in a dry run. Device calls are timed as issued: a CUDA
  // kernel's time lands on the next call that waits for it.
  std::uint64_t nanoseconds = 0;
};

// Opens the process-wide trace; raises InvalidArgument when one is open.
void start_trace(bool dry_run);
// Closes it and returns its entries (sorted by label, kernel, shape); raises
// InvalidArgument when none is open.
std::vector<TraceEntry> stop_trace();
bool trace_open();
bool trace_dry_run();

}  // namespace ringfire
