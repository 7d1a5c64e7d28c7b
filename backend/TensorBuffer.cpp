#include "TensorBuffer.h"

#include <c10/util/Exception.h>

namespace domino {

namespace {
bool known_dtype(at::ScalarType type, domino_dtype_t* out) {
  switch (type) {
    case at::kFloat:
      *out = DOMINO_FLOAT32;
      return true;
    case at::kDouble:
      *out = DOMINO_FLOAT64;
      return true;
    case at::kHalf:
      *out = DOMINO_FLOAT16;
      return true;
    case at::kBFloat16:
      *out = DOMINO_BFLOAT16;
      return true;
    case at::kChar:
      *out = DOMINO_INT8;
      return true;
    case at::kByte:
      *out = DOMINO_UINT8;
      return true;
    case at::kInt:
      *out = DOMINO_INT32;
      return true;
    case at::kLong:
      *out = DOMINO_INT64;
      return true;
    case at::kBool:
      *out = DOMINO_BOOL;
      return true;
    default:
      return false;
  }
}

domino_buffer_t as_buffer(const at::Tensor& t) {
  domino_dtype_t dtype;
  if (known_dtype(t.scalar_type(), &dtype)) {
    return {t.data_ptr(), static_cast<size_t>(t.numel()), dtype, -1};
  }
  return {t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), DOMINO_UINT8, -1};
}
}  // namespace

domino_dtype_t to_domino_dtype(at::ScalarType type, const std::string& where) {
  domino_dtype_t dtype;
  TORCH_CHECK(known_dtype(type, &dtype), where, ": dtype ", c10::toString(type),
              " cannot be reduced; use float32, float64, float16, bfloat16, int8, uint8, int32, "
              "int64 or bool");
  return dtype;
}

size_t transport_units_per_element(const at::Tensor& t) {
  domino_dtype_t dtype;
  return known_dtype(t.scalar_type(), &dtype) ? 1 : static_cast<size_t>(t.element_size());
}

StagedTensor::StagedTensor(at::Tensor user, bool copy_in) : user_(std::move(user)) {
  TORCH_CHECK(!user_.is_sparse(), "domino: sparse tensors are not supported");
  if (user_.is_cpu() && user_.is_contiguous()) {
    host_ = user_;
  } else if (copy_in) {
    // Blocking on purpose: the copy is ordered after the caller's pending work on its stream.
    host_ = user_.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  } else {
    host_ = at::empty(user_.sizes(), user_.options().device(at::kCPU));
  }
}

domino_buffer_t StagedTensor::buffer() const {
  return as_buffer(host_);
}

void StagedTensor::publish() {
  if (!host_.is_same(user_)) user_.copy_(host_);
}

StagedList::StagedList(const std::vector<at::Tensor>& tensors, bool copy_in) : tensors_(tensors) {
  TORCH_CHECK(!tensors_.empty(), "domino: empty tensor list");
  int64_t total = 0;
  for (const auto& t : tensors_) total += t.numel();
  flat_ = at::empty({total}, tensors_[0].options().device(at::kCPU));
  if (copy_in) {
    int64_t offset = 0;
    for (const auto& t : tensors_) {
      flat_.narrow(0, offset, t.numel()).copy_(t.reshape({-1}));
      offset += t.numel();
    }
  }
}

domino_buffer_t StagedList::buffer() const {
  return as_buffer(flat_);
}

void StagedList::publish() {
  int64_t offset = 0;
  for (auto& t : tensors_) {
    t.copy_(flat_.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace domino
