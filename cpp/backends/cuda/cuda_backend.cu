// The CUDA backend (see cuda_backend.h). Every kernel body is a function of
// ring/kernel_bodies.h or arith/ (RF_HD), which the CPU tests cover; what
// lives in this folder is launch geometry, memory layout and fusion. This
// file holds the backend's construction, its streams and the per-device
// instances; the kernels live in ntt.cu, elementwise.cu, base_convert.cu and
// automorphism.cu (README.md lists every file).
//
// Nothing here synchronises the host: operations enqueue on the device's
// stream and return. The exceptions are one-time uploads of cached constant
// tables (first use of an (N, q) or a converter) and the debug mode
// RINGFIRE_CUDA_SYNC=1, which synchronises after every kernel so an error is
// reported by the launch that caused it.
#include "cuda_backend.h"
#include "device.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_info.h"

namespace ringfire::cuda {

// ===========================================================================
// The backend

CudaBackend::CudaBackend(int device) : device_(device) {
  DeviceGuard guard(device_);
  // Non-blocking: the stream never waits on the legacy default stream, so
  // other libraries' work there cannot serialise ours.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cuda.backend");
  check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_), "cuda.backend");
  configure_ntt_kernels();
  const char* sync = std::getenv("RINGFIRE_CUDA_SYNC");
  sync_each_kernel_ = sync != nullptr && std::strcmp(sync, "0") != 0;
  const char* conversion = std::getenv("RINGFIRE_CUDA_BASE_CONVERT");
  fused_base_convert_ = conversion == nullptr || std::strcmp(conversion, "split") != 0;
  // Side-by-side measurements on one device: the NTT passes with their shape
  // read at run time, ModUp's limbs scattered by a kernel of their own, and
  // ModUp's digits converted one by one instead of batched.
  const char* ntt = std::getenv("RINGFIRE_CUDA_NTT");
  if (ntt != nullptr && std::strcmp(ntt, "generic") == 0) ntt_kernel_ = NttKernel::generic;
  const char* scatter = std::getenv("RINGFIRE_CUDA_SCATTER");
  scatter_in_ntt_ = scatter == nullptr || std::strcmp(scatter, "separate") != 0;
  const char* mod_up = std::getenv("RINGFIRE_CUDA_MODUP");
  batch_mod_up_ = mod_up == nullptr || std::strcmp(mod_up, "digits") != 0;
  // A batch's transforms polynomial-major, the order before 2026-12-04, side by side.
  const char* order = std::getenv("RINGFIRE_CUDA_NTT_ORDER");
  ntt_limb_major_ = order == nullptr || std::strcmp(order, "poly") != 0;
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  for (cudaEvent_t e : spare_events_) (void)cudaEventDestroy(e);
  for (void* p : owned_) (void)cudaFree(p);
}

std::string CudaBackend::name() const { return "cuda:" + std::to_string(device_); }

void CudaBackend::synchronize() {
  DeviceGuard guard(device_);
  check(cudaDeviceSynchronize(), "cuda.synchronize");
  device_pool(device_).settle();  // every queue is idle: cached blocks may move between them
}

cudaStream_t CudaBackend::stream() const {
  const QueueHandle queue = current_queue();
  return queue != 0 ? reinterpret_cast<cudaStream_t>(queue) : stream_;
}

QueueHandle CudaBackend::create_stream() {
  DeviceGuard guard(device_);
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cuda.stream");
  return reinterpret_cast<QueueHandle>(s);
}

void CudaBackend::destroy_stream(QueueHandle queue) {
  if (queue == 0) return;
  DeviceGuard guard(device_);
  auto s = reinterpret_cast<cudaStream_t>(queue);
  check(cudaStreamSynchronize(s), "cuda.stream");
  (void)cudaStreamDestroy(s);
}

// --- per-device instances -----------------------------------------------------

CudaBackend& backend(int index) {
  static std::mutex mutex;
  // Leaked on purpose (like the pools): static objects may still use them.
  static std::array<CudaBackend*, kMaxDevices> backends{};
  if (index < 0 || index >= kMaxDevices) throw_no_device("device", index);
  std::lock_guard<std::mutex> lock(mutex);
  // Core code looks the backend up per operation: after the first call this
  // is a lock and a load, with no CUDA runtime query.
  if (backends[index] == nullptr) {
    if (index >= cuda_device_count()) throw_no_device("device", index);
    backends[index] = new CudaBackend(index);
  }
  return *backends[index];
}

}  // namespace ringfire::cuda
