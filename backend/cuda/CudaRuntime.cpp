// The CUDA face of DeviceRuntime: the one backend file that includes CUDA headers.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <mutex>
#include <vector>

#include "DeviceRuntime.h"

namespace domino {

namespace {
void check(cudaError_t result, const char* what) {
  TORCH_CHECK(result == cudaSuccess, "domino: ", what, " failed: ", cudaGetErrorString(result));
}

class CudaRuntime : public DeviceRuntime {
 public:
  ~CudaRuntime() override {
    // Destroying a stream with work still queued is allowed: CUDA releases it once idle.
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  c10::Stream create_stream(c10::DeviceIndex device, int priority) override {
    c10::cuda::CUDAGuard guard(device);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority),
          "creating a comm stream");
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(stream);
    return c10::cuda::getStreamFromExternal(stream, device).unwrap();
  }

  std::pair<int, int> priority_range(c10::DeviceIndex device) override {
    c10::cuda::CUDAGuard guard(device);
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading stream priorities");
    return {least, greatest};
  }

  int priority_of(const c10::Stream& stream) override {
    return c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, stream).priority();
  }

  std::string identity(c10::DeviceIndex device) override {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, device), "reading device properties");
    std::string out;
    char byte[3];
    for (char c : props.uuid.bytes) {
      std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c));
      out += byte;
    }
    return out;
  }

  void* native_handle(const c10::Stream& stream) override {
    return c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, stream).stream();
  }

 private:
  std::mutex mutex_;
  std::vector<cudaStream_t> streams_;
};
}  // namespace

std::unique_ptr<DeviceRuntime> make_device_runtime() {
  if (c10::cuda::device_count() == 0) return nullptr;
  return std::make_unique<CudaRuntime>();
}

}  // namespace domino
