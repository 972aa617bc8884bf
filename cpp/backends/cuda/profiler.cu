// The kernel profiler: every launch between start_profiling() and
// stop_profiling() is bracketed by two CUDA events and tagged with the kernel
// name and the outermost OpLabel; after_launch also checks the launch and, in
// debug mode, synchronises.
#include "cuda_backend.h"
#include "device.h"

#include <mutex>
#include <utility>
#include <vector>

#include "ringfire/base/op_label.h"

namespace ringfire::cuda {

cudaStream_t CudaBackend::launch_stream() {
  const cudaStream_t s = stream();
  if (profiling_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    if (pending_start_ == nullptr) {
      pending_start_ = take_event();
      check(cudaEventRecord(pending_start_, s), "cuda.profile");
    }
  }
  return s;
}

void CudaBackend::after_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
  const cudaStream_t s = stream();
  if (profiling_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    if (pending_start_ != nullptr) {
      cudaEvent_t stop = take_event();
      check(cudaEventRecord(stop, s), "cuda.profile");
      records_.push_back({kernel, current_op_label(), pending_start_, stop});
      pending_start_ = nullptr;
    }
  }
  if (sync_each_kernel_) check(cudaStreamSynchronize(s), kernel);
}

cudaEvent_t CudaBackend::take_event() {
  if (!spare_events_.empty()) {
    cudaEvent_t e = spare_events_.back();
    spare_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cuda.profile");
  return e;
}

void CudaBackend::start_profiling() {
  DeviceGuard guard(device_);
  std::lock_guard<std::mutex> lock(profile_mutex_);
  for (auto& r : records_) spare_events_.insert(spare_events_.end(), {r.start, r.stop});
  records_.clear();
  profiling_ = true;
}

std::vector<KernelRecord> CudaBackend::stop_profiling() {
  DeviceGuard guard(device_);
  check(cudaDeviceSynchronize(), "cuda.profile");
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiling_ = false;
  if (pending_start_ != nullptr) spare_events_.push_back(std::exchange(pending_start_, nullptr));
  std::vector<KernelRecord> out;
  out.reserve(records_.size());
  for (auto& r : records_) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r.start, r.stop), "cuda.profile");
    out.push_back({r.kernel, r.op, ms * 1e-3});
    spare_events_.insert(spare_events_.end(), {r.start, r.stop});
  }
  records_.clear();
  return out;
}

}  // namespace ringfire::cuda
