#include "ringfire/ring/compute_frame.h"

#include "ringfire/base/memory_pool.h"
#include "ringfire/ring/backend.h"

namespace ringfire {

ComputeFrame::ComputeFrame(const Device& device) : device_(device) { pool_for(device_).begin_frame(); }

ComputeFrame::~ComputeFrame() {
  try {
    backend_for(device_).synchronize();
  } catch (...) {
    // Keep the blocks retained: work that uses them may still be running.
    return;
  }
  pool_for(device_).end_frame();
}

}  // namespace ringfire
