// Where a buffer lives: a device kind and an index ("cpu", "cuda:1").
//
// Kinds are registered by name. "cpu" (the host) always exists; every other
// kind comes from a backend that registers itself with its memory pool and
// its copier to and from the host (ring/backend.h adds the kernels, and
// cpp/backends/registry.cpp lists the backends built in). Core code never
// names a kind other than the host: a new backend — a GPU, a recording
// backend, a simulator — is one folder and one registration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringfire {

class MemoryPool;

using DeviceKind = std::uint16_t;
inline constexpr DeviceKind kHostKind = 0;  // "cpu"

struct Device {
  DeviceKind kind = kHostKind;
  int index = 0;

  static Device cpu() { return {}; }
  // "name" (index 0) or "name:N" for a registered kind; anything else raises
  // InvalidArgument listing the registered names.
  static Device parse(const std::string& text);
  bool is_host() const { return kind == kHostKind; }
  // "cpu" for the host, "name:N" otherwise.
  std::string str() const;
  bool operator==(const Device& other) const = default;
};

// The message of an operation whose operands live on two devices ("cpu vs cuda:0", and how to
// move one): operations never move data the caller did not ask to move.
std::string different_devices(const Device& a, const Device& b);

// A kind's memory: the pool of its device `index`, which may raise
// NotSupported (no such device, backend not available).
using PoolResolver = MemoryPool& (*)(int index);
// Copies `bytes` between a device of the kind and the host (either way) or
// between two devices of the kind (see device_copy.h for the ordering rules).
using DeviceCopier = void (*)(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                              std::size_t bytes);

// Registers the kind `name` (letters, digits and '_'), or replaces the
// pool and copier of a kind already registered under it; returns its id.
// At most 32 kinds. Thread-safe; lookups are lock-free.
DeviceKind register_device_kind(const std::string& name, PoolResolver pool, DeviceCopier copier);
// The registered names, in id order ("cpu" first).
std::vector<std::string> device_kind_names();
const std::string& device_kind_name(DeviceKind kind);
// The kind's pool resolver and copier (nullptr for the host, which has
// host_pool() and memcpy).
PoolResolver device_pool_resolver(DeviceKind kind);
DeviceCopier device_copier(DeviceKind kind);

}  // namespace ringfire
