#include "WeightInit.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>

#include <stdexcept>

namespace domino::overlap {

WeightInit::WeightInit(uint64_t seed, double std, at::ScalarType dtype)
    : generator_(at::detail::createCPUGenerator(seed)), std_(std), dtype_(dtype) {}

at::Tensor WeightInit::normal(at::IntArrayRef shape, double scale) {
  auto full = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  full.normal_(0.0, std_ * scale, generator_);  // the kernel locks the generator
  return full.to(dtype_);
}

at::Tensor WeightInit::constant(at::IntArrayRef shape, double value) const {
  return at::full(shape, value, at::TensorOptions().dtype(dtype_));
}

at::ScalarType parse_params_dtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float64") return at::kDouble;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw std::invalid_argument("params_dtype='" + name +
                              "' is not one of float32, float64, bfloat16, float16");
}

}  // namespace domino::overlap
