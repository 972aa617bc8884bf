// Internal to backends/cuda: the device helpers every file of the backend
// shares (the device count limit, the scoped device switch, the error for a
// missing GPU). Anonymous namespace: each .cu keeps its own internal copy.
#pragma once

#include <string>

#include "cuda_backend.h"
#include "ringfire/base/errors.h"
#include "backends/cuda/cuda_info.h"

namespace ringfire::cuda {
namespace {

constexpr int kMaxDevices = 64;

// Makes `device` current for a scope and restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous_), "cuda.device");
    if (previous_ != device) check(cudaSetDevice(device), "cuda.device");
  }
  ~DeviceGuard() {
    int now = 0;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

[[noreturn]] void throw_no_device(const std::string& op, int index) {
  throw_not_supported(op, "cuda:" + std::to_string(index) + ": no usable CUDA device (this machine has " +
                              std::to_string(cuda_device_count()) +
                              " visible GPU(s)); the CUDA backend is compiled in but needs an NVIDIA GPU and driver. "
                              "Use device 'cpu'.");
}

}  // namespace
}  // namespace ringfire::cuda
