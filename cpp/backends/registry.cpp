// The backend registry: device kind -> kernels, and the backends this build
// contains. A new backend is a folder beside cpu/ and cuda/ that provides a
// BackendRegistration, plus one line in builtin_backends() below.
#include <array>
#include <atomic>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/registration.h"
#include "backends/trace/tracing_backend.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/backend.h"
#include "ringfire/ring/trace.h"

namespace ringfire {

namespace {

std::array<std::atomic<BackendFactory>, 32> g_factories{};

Backend& host_backend(int /*index*/) { return cpu::cpu_backend(); }

// Registered while the library loads (before main, and before any Python
// code runs), so every kind parses from the start.
const bool g_builtins_registered = [] {
  g_factories[kHostKind].store(&host_backend);
  register_backend(cuda_registration());  // the CUDA backend, or its stand-in
  return true;
}();

}  // namespace

DeviceKind register_backend(const BackendRegistration& registration) {
  require(registration.factory != nullptr, "backend", "backend '" + registration.name + "' registers no factory");
  const DeviceKind kind = register_device_kind(registration.name, registration.pool, registration.copier);
  require(kind < g_factories.size(), "backend", "too many backends");
  g_factories[kind].store(registration.factory);
  return kind;
}

Backend& backend_for(const Device& device) {
  (void)g_builtins_registered;
  const BackendFactory factory = device.kind < g_factories.size() ? g_factories[device.kind].load() : nullptr;
  if (factory == nullptr) throw_not_supported("device", "no backend for device '" + device.str() + "'");
  Backend& backend = factory(device.index);
  return trace_open() ? trace::wrap(backend, device.kind) : backend;
}

}  // namespace ringfire
