// The wrapper backend_for() hands out while a trace is open (ring/trace.h;
// trace_open() is one relaxed atomic load, the registry's fast path):
// it counts each call and forwards it to the device's own backend, or, in a
// dry run, drops it.
#pragma once

#include "ringfire/base/device.h"
#include "ringfire/ring/backend.h"

namespace ringfire::trace {

// The counting wrapper around `inner`, the backend of device kind `kind`
// (one wrapper per backend, alive for the whole process).
Backend& wrap(Backend& inner, DeviceKind kind);

}  // namespace ringfire::trace
