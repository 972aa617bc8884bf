// The CUDA runtime controls in builds without the CUDA backend.
#include "ringfire/base/errors.h"
#include "runtime.h"

namespace ringfire::cuda {

namespace {
[[noreturn]] void unavailable(const char* op) {
  throw_not_supported(op, "this build of ringfire has no CUDA backend (built with RINGFIRE_CUDA=OFF or without nvcc)");
}
}  // namespace

QueueHandle create_stream(int) { unavailable("cuda.stream"); }
void destroy_stream(int, QueueHandle) { unavailable("cuda.stream"); }
void start_profiling(int) { unavailable("cuda.profile"); }
std::vector<KernelRecord> stop_profiling(int) { unavailable("cuda.profile"); }
void set_sync_each_kernel(int, bool) { unavailable("cuda.debug_sync"); }

}  // namespace ringfire::cuda
