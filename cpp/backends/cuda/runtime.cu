// The runtime controls (see runtime.h) on the per-device backends.
#include "cuda_backend.h"
#include "runtime.h"

namespace ringfire::cuda {

QueueHandle create_stream(int device) { return backend(device).create_stream(); }
void destroy_stream(int device, QueueHandle stream) { backend(device).destroy_stream(stream); }
void start_profiling(int device) { backend(device).start_profiling(); }
std::vector<KernelRecord> stop_profiling(int device) { return backend(device).stop_profiling(); }
void set_sync_each_kernel(int device, bool on) { backend(device).set_sync_each_kernel(on); }

}  // namespace ringfire::cuda
