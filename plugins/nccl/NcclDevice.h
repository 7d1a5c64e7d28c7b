// What every NCCL call of this transport needs: its device made current, and a dtype in NCCL's
// terms. Internal to plugins/nccl.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "domino/plugin.h"

namespace domino::nccl {

// Makes device the current one for this thread while it lives; NCCL calls use the current device.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

inline ncclDataType_t nccl_type(domino_dtype_t dtype) {
  switch (dtype) {
    case DOMINO_FLOAT32:
      return ncclFloat32;
    case DOMINO_FLOAT64:
      return ncclFloat64;
    case DOMINO_FLOAT16:
      return ncclFloat16;
    case DOMINO_BFLOAT16:
      return ncclBfloat16;
    case DOMINO_INT8:
      return ncclInt8;
    case DOMINO_INT32:
      return ncclInt32;
    case DOMINO_INT64:
      return ncclInt64;
    case DOMINO_UINT8:
    case DOMINO_BOOL:
    default:
      return ncclUint8;
  }
}

}  // namespace domino::nccl
