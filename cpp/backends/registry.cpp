// Chooses the backend for a device. The CUDA entry point comes from the cuda
// target when it is built, or from the no_cuda stub, which raises NotSupported.
#include "cpu/cpu_backend.h"
#include "ringfire/base/errors.h"
#include "ringfire/ring/backend.h"

namespace ringfire {

Backend& cuda_backend(int device_index);  // backends/cuda or backends/no_cuda

Backend& backend_for(const Device& device) {
  if (device.type == DeviceType::cpu) return cpu::cpu_backend();
  return cuda_backend(device.index);
}

}  // namespace ringfire
