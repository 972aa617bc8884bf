#include "ringfire/base/device_copy.h"

#include <cstring>

#include "ringfire/base/errors.h"

namespace ringfire {

void copy_between(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_host() && src_device.is_host()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // The non-host side's kind moves the bytes.
  const DeviceKind kind = !dst_device.is_host() ? dst_device.kind : src_device.kind;
  require(dst_device.is_host() || src_device.is_host() || dst_device.kind == src_device.kind, "device.copy",
          "no copier between '" + src_device.str() + "' and '" + dst_device.str() + "': go through the host");
  const DeviceCopier copier = device_copier(kind);
  if (copier == nullptr)
    throw_not_supported("device.copy", "no backend can copy between '" + src_device.str() + "' and '" +
                                           dst_device.str() + "' in this build");
  copier(dst, dst_device, src, src_device, bytes);
}

}  // namespace ringfire
