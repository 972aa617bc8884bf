// Where a buffer lives. Only "cpu" has a backend today; "cuda[:i]" parses so
// callers can already name it and get a clear NotSupported when it is absent.
#pragma once

#include <string>

namespace ringfire {

enum class DeviceType { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {}; }
  // Accepts "cpu", "cuda", "cuda:N"; anything else raises InvalidArgument.
  static Device parse(const std::string& text);
  std::string str() const;
  bool operator==(const Device& other) const = default;
};

}  // namespace ringfire
