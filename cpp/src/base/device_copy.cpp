#include "ringfire/base/device_copy.h"

#include <cstring>

#include "ringfire/base/errors.h"

namespace ringfire {

namespace {
DeviceCopier g_copiers[2] = {nullptr, nullptr};
}  // namespace

void register_copier(DeviceType type, DeviceCopier copier) { g_copiers[static_cast<int>(type)] = copier; }

void copy_between(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.type == DeviceType::cpu && src_device.type == DeviceType::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // The non-host side's backend moves the bytes.
  const DeviceType type = dst_device.type != DeviceType::cpu ? dst_device.type : src_device.type;
  DeviceCopier copier = g_copiers[static_cast<int>(type)];
  if (copier == nullptr)
    throw_not_supported("device.copy", "no backend can copy between '" + src_device.str() + "' and '" +
                                           dst_device.str() + "' in this build");
  copier(dst, dst_device, src, src_device, bytes);
}

}  // namespace ringfire
