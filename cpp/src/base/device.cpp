#include "ringfire/base/device.h"

#include <cctype>

#include "ringfire/base/errors.h"

namespace ringfire {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device{DeviceType::cuda, 0};
  const std::string prefix = "cuda:";
  if (text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0) {
    const std::string digits = text.substr(prefix.size());
    bool all_digits = digits.size() <= 4;
    for (char c : digits) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
    if (all_digits) return Device{DeviceType::cuda, std::stoi(digits)};
  }
  throw_invalid("device", "unknown device '" + text + "' (expected 'cpu', 'cuda' or 'cuda:N')");
}

std::string Device::str() const {
  if (type == DeviceType::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

}  // namespace ringfire
