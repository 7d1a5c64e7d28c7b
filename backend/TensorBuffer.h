// Tensors as the plain buffers transports take. Non-contiguous CPU tensors go through a
// contiguous copy that is written back once the transfer is done. CUDA tensors are placed when
// their lane runs them, on the lane's comm stream: as they are (contiguous) for a device
// transport, or through pinned host memory for the CPU transports (DeviceSession says which).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <string>
#include <vector>

#include "OpSite.h"
#include "domino/plugin.h"

namespace domino {

// Set by a lane around the body of a CUDA collective, for the tensors it places.
struct DeviceSession {
  c10::Stream stream;  // the lane's comm stream on the tensors' device (also the current one)
  bool staged;         // through host memory over the CPU transports
  static const DeviceSession* current();
};

class DeviceSessionScope {
 public:
  explicit DeviceSessionScope(const DeviceSession* session);
  ~DeviceSessionScope();
  DeviceSessionScope(const DeviceSessionScope&) = delete;
  DeviceSessionScope& operator=(const DeviceSessionScope&) = delete;

 private:
  const DeviceSession* previous_;
};

// Inside a CUDA op's body: the lane's comm stream uses t, so its memory is not handed out again
// before that stream is done with it. Nothing for host tensors or outside a session.
void hold_for_session(const at::Tensor& t);

// Inverse of to_domino_dtype.
at::ScalarType to_scalar_type(domino_dtype_t dtype);

// For reductions: the dtype must be one domino can reduce; throws naming where otherwise.
domino_dtype_t to_domino_dtype(at::ScalarType type, const OpSite& where);

// How many transport units one element of t is: 1, or its size for dtypes that travel as bytes.
size_t transport_units_per_element(const at::Tensor& t);

class StagedTensor {
 public:
  // copy_in: whether the transfer reads the tensor's current contents.
  explicit StagedTensor(at::Tensor user, bool copy_in = true);
  // Elements of the tensor's own dtype; dtypes domino cannot reduce travel as bytes.
  domino_buffer_t buffer();
  // Copies the result back into the user's tensor when it was staged.
  void publish();

 private:
  void place();

  at::Tensor user_;
  at::Tensor working_;  // what the transport reads and writes
  bool copy_in_;
};

// One contiguous host tensor standing for a list of same-dtype tensors laid end to end.
class StagedList {
 public:
  StagedList(const std::vector<at::Tensor>& tensors, bool copy_in);
  domino_buffer_t buffer();
  // Copies each piece of the flat buffer back into its tensor.
  void publish();

 private:
  void place();

  std::vector<at::Tensor> tensors_;
  at::Tensor flat_;
  bool copy_in_;
};

}  // namespace domino
