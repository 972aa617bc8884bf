// Compute frames (seed 000 §III-G): buffers released on a device while a
// frame is open are retained rather than reused, so a computation that
// spans several queues can drop temporaries freely; when the (outermost)
// frame ends, the device is synchronised and the retained blocks go back to
// the pool's free lists. Frames nest; outside any frame, blocks are reused
// per queue at once (see base/memory_pool.h).
#pragma once

#include "ringfire/base/device.h"

namespace ringfire {

class ComputeFrame {
 public:
  explicit ComputeFrame(const Device& device);
  // Synchronises the device and ends the frame (never throws: a device error
  // here is left for the next synchronising call to report).
  ~ComputeFrame();
  ComputeFrame(const ComputeFrame&) = delete;
  ComputeFrame& operator=(const ComputeFrame&) = delete;

 private:
  Device device_;
};

}  // namespace ringfire
