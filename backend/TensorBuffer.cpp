#include "TensorBuffer.h"

#include <c10/core/impl/VirtualGuardImpl.h>
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
  const int32_t device = t.is_cuda() ? t.device().index() : -1;
  domino_dtype_t dtype;
  if (known_dtype(t.scalar_type(), &dtype)) {
    return {t.data_ptr(), static_cast<size_t>(t.numel()), dtype, device};
  }
  return {t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), DOMINO_UINT8, device};
}

thread_local const DeviceSession* current_session = nullptr;

const DeviceSession& session_for(const at::Tensor& t) {
  TORCH_CHECK(current_session != nullptr, "domino: internal error: a ", t.device(),
              " tensor reached a transport outside its lane's device session");
  return *current_session;
}

// The comm stream uses the tensor's memory: the caching allocator must not hand it out again
// before that stream is done, even if the caller drops the tensor without waiting.
void record_on(const at::Tensor& t, const c10::Stream& stream) {
  if (!t.defined() || !t.has_storage() || t.numel() == 0) return;
  c10::impl::VirtualGuardImpl(stream.device_type())
      .recordDataPtrOnStream(t.storage().data_ptr(), stream);
}

at::TensorOptions placement(const at::Tensor& like, const DeviceSession& session) {
  return session.staged ? like.options().device(at::kCPU).pinned_memory(true) : like.options();
}
}  // namespace

void hold_for_session(const at::Tensor& t) {
  if (current_session != nullptr && t.defined() && t.is_cuda()) {
    record_on(t, current_session->stream);
  }
}

const DeviceSession* DeviceSession::current() {
  return current_session;
}

DeviceSessionScope::DeviceSessionScope(const DeviceSession* session) : previous_(current_session) {
  current_session = session;
}

DeviceSessionScope::~DeviceSessionScope() {
  current_session = previous_;
}

at::ScalarType to_scalar_type(domino_dtype_t dtype) {
  switch (dtype) {
    case DOMINO_FLOAT32:
      return at::kFloat;
    case DOMINO_FLOAT64:
      return at::kDouble;
    case DOMINO_FLOAT16:
      return at::kHalf;
    case DOMINO_BFLOAT16:
      return at::kBFloat16;
    case DOMINO_INT8:
      return at::kChar;
    case DOMINO_INT32:
      return at::kInt;
    case DOMINO_INT64:
      return at::kLong;
    case DOMINO_BOOL:
      return at::kBool;
    case DOMINO_UINT8:
    default:
      return at::kByte;
  }
}

domino_dtype_t to_domino_dtype(at::ScalarType type, const OpSite& where) {
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

StagedTensor::StagedTensor(at::Tensor user, bool copy_in)
    : user_(std::move(user)), copy_in_(copy_in) {
  TORCH_CHECK(!user_.is_sparse(), "domino: sparse tensors are not supported");
  if (!user_.is_cpu()) return;  // placed by the lane, on its comm stream
  if (user_.is_contiguous()) {
    working_ = user_;
  } else if (copy_in) {
    working_ = user_.contiguous();
  } else {
    working_ = at::empty(user_.sizes(), user_.options());
  }
}

void StagedTensor::place() {
  if (working_.defined()) return;
  const DeviceSession& session = session_for(user_);
  record_on(user_, session.stream);
  if (!session.staged && user_.is_contiguous()) {
    working_ = user_;
    return;
  }
  working_ = at::empty(user_.sizes(), placement(user_, session));
  if (!copy_in_) return;
  working_.copy_(user_, /*non_blocking=*/true);
  // The CPU transports read host memory directly: the copy must have landed.
  if (session.staged) session.stream.synchronize();
}

domino_buffer_t StagedTensor::buffer() {
  place();
  return as_buffer(working_);
}

void StagedTensor::publish() {
  place();
  // Pinned host to device (or device to device) is asynchronous on the comm stream, which the
  // work's completion event follows.
  if (!working_.is_same(user_)) user_.copy_(working_, /*non_blocking=*/true);
}

StagedList::StagedList(const std::vector<at::Tensor>& tensors, bool copy_in)
    : tensors_(tensors), copy_in_(copy_in) {
  TORCH_CHECK(!tensors_.empty(), "domino: empty tensor list");
  if (tensors_[0].is_cpu()) place();
}

void StagedList::place() {
  if (flat_.defined()) return;
  int64_t total = 0;
  for (const auto& t : tensors_) total += t.numel();
  const at::Tensor& first = tensors_[0];
  const DeviceSession* session = first.is_cpu() ? nullptr : &session_for(first);
  if (session != nullptr) {
    for (const auto& t : tensors_) record_on(t, session->stream);
  }
  flat_ = at::empty({total}, session ? placement(first, *session) : first.options());
  if (copy_in_) {
    int64_t offset = 0;
    for (const auto& t : tensors_) {
      flat_.narrow(0, offset, t.numel()).copy_(t.reshape({-1}), /*non_blocking=*/true);
      offset += t.numel();
    }
    if (session != nullptr && session->staged) session->stream.synchronize();
  }
}

domino_buffer_t StagedList::buffer() {
  place();
  return as_buffer(flat_);
}

void StagedList::publish() {
  place();
  int64_t offset = 0;
  for (auto& t : tensors_) {
    t.copy_(flat_.narrow(0, offset, t.numel()).view(t.sizes()), /*non_blocking=*/true);
    offset += t.numel();
  }
}

}  // namespace domino
