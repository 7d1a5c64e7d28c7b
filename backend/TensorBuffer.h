// Tensors as the plain buffers transports take. Non-contiguous and GPU tensors are staged
// through a contiguous host copy that is written back once the transfer is done.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "domino/plugin.h"

namespace domino {

// For reductions: the dtype must be one domino can reduce; throws naming where otherwise.
domino_dtype_t to_domino_dtype(at::ScalarType type, const std::string& where);

// How many transport units one element of t is: 1, or its size for dtypes that travel as bytes.
size_t transport_units_per_element(const at::Tensor& t);

class StagedTensor {
 public:
  // copy_in: whether the transfer reads the tensor's current contents.
  explicit StagedTensor(at::Tensor user, bool copy_in = true);
  // Elements of the tensor's own dtype; dtypes domino cannot reduce travel as bytes.
  domino_buffer_t buffer() const;
  // Copies the result back into the user's tensor when it was staged.
  void publish();
  const at::Tensor& host() const { return host_; }

 private:
  at::Tensor user_;
  at::Tensor host_;
};

// One contiguous host tensor standing for a list of same-dtype tensors laid end to end.
class StagedList {
 public:
  StagedList(const std::vector<at::Tensor>& tensors, bool copy_in);
  domino_buffer_t buffer() const;
  // Copies each piece of the flat buffer back into its tensor.
  void publish();

 private:
  std::vector<at::Tensor> tensors_;
  at::Tensor flat_;
};

}  // namespace domino
