// What the backend needs from CUDA beyond torch's device-generic API (c10::Stream, c10::Event):
// comm streams at chosen priorities and a device's identity. Behind an interface so that only
// one translation unit includes CUDA headers, and CPU-only builds link without it.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <memory>
#include <string>
#include <utility>

namespace domino {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // A new stream on device at priority (CUDA's convention: lower is more urgent). Lives as long
  // as this runtime.
  virtual c10::Stream create_stream(c10::DeviceIndex device, int priority) = 0;
  // {least, greatest} stream priority of device.
  virtual std::pair<int, int> priority_range(c10::DeviceIndex device) = 0;
  virtual int priority_of(const c10::Stream& stream) = 0;
  // Unique across the machine (the GPU's UUID): ranks with equal identities share one GPU.
  virtual std::string identity(c10::DeviceIndex device) = 0;
  // The cudaStream_t behind stream, for transports.
  virtual void* native_handle(const c10::Stream& stream) = 0;
  // A stream passing from one group's runtime to another's (a shrunk group keeps its parent's):
  // the first stops holding it, the second holds it from now on.
  virtual void release(const c10::Stream& stream) = 0;
  virtual void adopt(const c10::Stream& stream) = 0;
};

// nullptr when this build has no CUDA or the process sees no GPU.
std::unique_ptr<DeviceRuntime> make_device_runtime();

}  // namespace domino
