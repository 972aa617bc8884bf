// Copies between devices. The host copy is memcpy; the other kinds bring
// theirs when they register (device.h). A copy into host memory waits for all work
// on the source device first (it is a synchronisation point); a copy into
// device memory has landed when copy_between returns, so any queue may read
// it. Device-to-device copies on one device are ordered on its current queue.
#pragma once

#include <cstddef>

#include "ringfire/base/device.h"

namespace ringfire {

void copy_between(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes);

}  // namespace ringfire
