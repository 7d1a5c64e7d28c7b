#include "DeviceMemory.h"

#include <ATen/ATen.h>

#include "TensorBuffer.h"

namespace domino {

namespace {
at::TensorOptions bytes_on(int device) {
  return at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA, device));
}
}  // namespace

std::shared_ptr<void> DeviceMemory::allocate(size_t bytes, int device) {
  // The caching allocator ties the block to the current (comm) stream, so releasing it when the
  // holder goes is safe even while the stream still uses it.
  at::Tensor scratch = at::zeros({static_cast<int64_t>(bytes)}, bytes_on(device));
  return std::shared_ptr<void>(scratch.data_ptr(), [scratch](void*) mutable { scratch.reset(); });
}

void DeviceMemory::copy(void* dst, const void* src, size_t bytes, int device) {
  if (bytes == 0) return;
  const auto n = static_cast<int64_t>(bytes);
  at::from_blob(dst, {n}, bytes_on(device))
      .copy_(at::from_blob(const_cast<void*>(src), {n}, bytes_on(device)), /*non_blocking=*/true);
}

void DeviceMemory::divide(const domino_buffer_t& buffer, int divisor) {
  if (buffer.count == 0) return;
  const at::ScalarType type = to_scalar_type(buffer.dtype);
  at::Tensor data =
      at::from_blob(buffer.ptr, {static_cast<int64_t>(buffer.count)},
                    at::TensorOptions().dtype(type).device(at::Device(at::kCUDA, buffer.device)));
  if (at::isIntegralType(type, /*includeBool=*/true)) {
    data.div_(divisor, "trunc");
  } else {
    data.div_(divisor);
  }
}

}  // namespace domino
