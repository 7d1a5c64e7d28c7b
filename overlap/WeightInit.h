// Seeded weight initialisation that does not depend on the tensor-parallel size: every rank
// draws the full (unsharded) tensor from the same stream and keeps its own slice, so TP=1 and
// TP=4 start from the same model (as Megatron's master-weight initialisation does).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace domino::overlap {

class WeightInit {
 public:
  WeightInit(uint64_t seed, double std, at::ScalarType dtype);

  // Full tensors, in draw order; callers must draw in the same order on every rank.
  at::Tensor normal(at::IntArrayRef shape, double scale = 1.0);
  at::Tensor constant(at::IntArrayRef shape, double value) const;

  at::ScalarType dtype() const { return dtype_; }

 private:
  at::Generator generator_;
  double std_;
  at::ScalarType dtype_;
};

// "float32" | "float64" | "bfloat16" | "float16".
at::ScalarType parse_params_dtype(const std::string& name);

}  // namespace domino::overlap
