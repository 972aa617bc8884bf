#include "ringfire/base/queue.h"

namespace ringfire {

namespace {
thread_local QueueHandle t_queue = 0;
}  // namespace

QueueHandle current_queue() { return t_queue; }

QueueHandle exchange_current_queue(QueueHandle queue) {
  const QueueHandle previous = t_queue;
  t_queue = queue;
  return previous;
}

QueueScope::QueueScope(QueueHandle queue) : previous_(t_queue) { t_queue = queue; }

QueueScope::~QueueScope() { t_queue = previous_; }

}  // namespace ringfire
