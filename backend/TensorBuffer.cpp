#include "TensorBuffer.h"

#include <c10/util/Exception.h>

#include "plugins/common/Dtype.h"

namespace domino {

domino_dtype_t to_domino_dtype(at::ScalarType type, const std::string& where) {
  switch (type) {
    case at::kFloat:
      return DOMINO_FLOAT32;
    case at::kDouble:
      return DOMINO_FLOAT64;
    case at::kHalf:
      return DOMINO_FLOAT16;
    case at::kBFloat16:
      return DOMINO_BFLOAT16;
    case at::kChar:
      return DOMINO_INT8;
    case at::kByte:
      return DOMINO_UINT8;
    case at::kInt:
      return DOMINO_INT32;
    case at::kLong:
      return DOMINO_INT64;
    case at::kBool:
      return DOMINO_BOOL;
    default:
      TORCH_CHECK(false, where, ": dtype ", c10::toString(type),
                  " is not supported; use float32, float64, float16, bfloat16, int8, uint8, "
                  "int32, int64 or bool");
  }
}

StagedTensor::StagedTensor(at::Tensor user) : user_(std::move(user)) {
  TORCH_CHECK(!user_.is_sparse(), "domino: sparse tensors are not supported");
  if (user_.is_cpu() && user_.is_contiguous()) {
    host_ = user_;
  } else {
    // Blocking on purpose: the copy is ordered after the caller's pending work on its stream.
    host_ = user_.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  }
}

domino_buffer_t StagedTensor::buffer() {
  return domino_buffer_t{host_.data_ptr(), static_cast<size_t>(host_.numel()),
                         to_domino_dtype(host_.scalar_type(), "domino"), -1};
}

void StagedTensor::publish() {
  if (!host_.is_same(user_)) user_.copy_(host_);
}

}  // namespace domino
