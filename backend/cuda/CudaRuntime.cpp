// The CUDA face of DeviceRuntime: the one backend file that includes CUDA headers.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "DeviceRuntime.h"

namespace domino {

namespace {
void check(cudaError_t result, const char* what) {
  TORCH_CHECK(result == cudaSuccess, "domino: ", what, " failed: ", cudaGetErrorString(result));
}

// Comm streams are never destroyed: the caching allocator may still record events on them for
// tensors that outlive their group. A group that goes hands its streams back for the next one.
class StreamShelf {
 public:
  static StreamShelf& instance() {
    static auto* shelf = new StreamShelf();  // never destroyed: streams outlive static teardown
    return *shelf;
  }
  cudaStream_t take(c10::DeviceIndex device, int priority) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& spare = spare_[{device, priority}];
      if (!spare.empty()) {
        cudaStream_t stream = spare.back();
        spare.pop_back();
        return stream;
      }
    }
    c10::cuda::CUDAGuard guard(device);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority),
          "creating a comm stream");
    return stream;
  }
  void give_back(c10::DeviceIndex device, int priority, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    spare_[{device, priority}].push_back(stream);
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<c10::DeviceIndex, int>, std::vector<cudaStream_t>> spare_;
};

class CudaRuntime : public DeviceRuntime {
 public:
  ~CudaRuntime() override {
    for (const auto& held : streams_) {
      StreamShelf::instance().give_back(held.device, held.priority, held.stream);
    }
  }

  c10::Stream create_stream(c10::DeviceIndex device, int priority) override {
    cudaStream_t stream = StreamShelf::instance().take(device, priority);
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back({device, priority, stream});
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

  void release(const c10::Stream& stream) override {
    const auto native = static_cast<cudaStream_t>(native_handle(stream));
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(streams_, [&](const Held& held) { return held.stream == native; });
  }

  void adopt(const c10::Stream& stream) override {
    const auto native = static_cast<cudaStream_t>(native_handle(stream));
    const int priority = priority_of(stream);
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back({stream.device_index(), priority, native});
  }

 private:
  struct Held {
    c10::DeviceIndex device;
    int priority;
    cudaStream_t stream;
  };
  std::mutex mutex_;
  std::vector<Held> streams_;
};
}  // namespace

std::unique_ptr<DeviceRuntime> make_device_runtime() {
  if (c10::cuda::device_count() == 0) return nullptr;
  return std::make_unique<CudaRuntime>();
}

}  // namespace domino
