// Execution queues. Device work is issued to the calling thread's current
// queue: 0 means the device's default queue; a backend may hand out others
// (the CUDA backend's streams), and core code names them only as opaque
// handles, so it never sees a device API. A QueueScope makes a queue current
// for the calling thread until it ends (scopes nest).
#pragma once

#include <cstdint>

namespace ringfire {

using QueueHandle = std::uintptr_t;

// The calling thread's current queue (0: the device's default queue).
QueueHandle current_queue();
// Sets it and returns the previous one (for bindings that cannot hold a
// QueueScope across calls; C++ code uses QueueScope).
QueueHandle exchange_current_queue(QueueHandle queue);

class QueueScope {
 public:
  explicit QueueScope(QueueHandle queue);
  ~QueueScope();
  QueueScope(const QueueScope&) = delete;
  QueueScope& operator=(const QueueScope&) = delete;

 private:
  QueueHandle previous_;
};

}  // namespace ringfire
