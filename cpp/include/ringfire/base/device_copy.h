// Copies between devices. The host copy is memcpy; backends of other devices
// install theirs when they load. A copy into host memory has finished when
// copy_between returns (it is a synchronisation point for the source
// device's current queue); copies into device memory are ordered on the
// destination device's current queue and may still be in flight.
#pragma once

#include <cstddef>

#include "ringfire/base/device.h"

namespace ringfire {

using DeviceCopier = void (*)(void* dst, const Device& dst_device, const void* src, const Device& src_device,
                              std::size_t bytes);

void register_copier(DeviceType type, DeviceCopier copier);

void copy_between(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes);

}  // namespace ringfire
