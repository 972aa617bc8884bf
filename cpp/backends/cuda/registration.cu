// The "cuda" device kind (registration.h): the backend and pool of each GPU,
// and the copies Buffer::to makes between host and devices.
#include "cuda_backend.h"
#include "device.h"
#include "registration.h"

#include <cstddef>

#include "ringfire/base/device_copy.h"

namespace ringfire {

namespace cuda {
namespace {

// Host <-> device and device <-> device copies for Buffer::to. Uploads and
// peer copies wait for their own copy, so the data is ready for every
// stream (a value is uploaded once, lazily); a download waits for the whole
// device first, since the value may have been computed on any stream (a
// download is a sync point).
void cuda_copy(void* dst, const Device& dst_device, const void* src, const Device& src_device, std::size_t bytes) {
  const bool to_host = dst_device.is_host(), from_host = src_device.is_host();
  const int index = to_host ? src_device.index : dst_device.index;
  CudaBackend& be = backend(index);
  DeviceGuard guard(index);
  const cudaStream_t s = be.stream();
  if (from_host) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "cuda.upload");
    check(cudaStreamSynchronize(s), "cuda.upload");
  } else if (to_host) {
    check(cudaDeviceSynchronize(), "cuda.download");
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "cuda.download");
    check(cudaStreamSynchronize(s), "cuda.download");
  } else if (src_device.index == dst_device.index) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "cuda.copy");
  } else {
    // Between GPUs: the source's work must be done before the peer copy reads it.
    backend(src_device.index).synchronize();
    check(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, s), "cuda.peer_copy");
    check(cudaStreamSynchronize(s), "cuda.peer_copy");
  }
}

}  // namespace
}  // namespace cuda

// "cuda:N": the backend and pool of GPU N (raising NotSupported while no GPU
// is visible), and the copies above.
BackendRegistration cuda_registration() {
  return {"cuda", [](int index) -> Backend& { return cuda::backend(index); },
          [](int index) -> MemoryPool& { return cuda::device_pool(index); }, &cuda::cuda_copy};
}

}  // namespace ringfire
