// Tensors as the plain buffers transports take. Non-contiguous and GPU tensors are staged
// through a contiguous host copy and written back once the transfer is done.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "domino/plugin.h"

namespace domino {

domino_dtype_t to_domino_dtype(at::ScalarType type, const std::string& where);

class StagedTensor {
 public:
  explicit StagedTensor(at::Tensor user);
  domino_buffer_t buffer();
  // Copies the result back into the user's tensor when it was staged.
  void publish();

 private:
  at::Tensor user_;
  at::Tensor host_;
};

}  // namespace domino
