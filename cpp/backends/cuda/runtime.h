// The CUDA runtime controls the Python layer needs (streams, profiling, the
// debug mode), as plain C++ so the bindings compile in every build; builds
// without CUDA link runtime_unavailable.cpp, which raises NotSupported.
#pragma once

#include <string>
#include <vector>

#include "ringfire/base/queue.h"

namespace ringfire::cuda {

// One kernel's time in a profile: its name, the high-level operation it ran
// under (base/op_label.h) and the seconds between its CUDA events.
struct KernelRecord {
  std::string kernel, op;
  double seconds = 0;
};

// A new non-blocking stream on `device`, as a queue handle for QueueScope.
QueueHandle create_stream(int device);
// Waits for the stream's work, then destroys it.
void destroy_stream(int device, QueueHandle stream);
void start_profiling(int device);
std::vector<KernelRecord> stop_profiling(int device);
// Debug mode: synchronise after every kernel so errors surface at their launch.
void set_sync_each_kernel(int device, bool on);

}  // namespace ringfire::cuda
