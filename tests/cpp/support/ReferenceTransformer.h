// A plain single-process transformer written from the math (no sharding, no overlap), reading
// unsharded weights by the Domino modules' parameter names: what the layers are checked against.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>

#include "overlap/TransformerConfig.h"

namespace domino::testing {

using State = std::map<std::string, at::Tensor>;

// Random unsharded weights for `layers` layers named "<prefix><i>." (or one unprefixed layer when
// prefix is empty), plus "final_norm" when asked.
State random_state(const overlap::TransformerConfig& config, int64_t layers,
                   const std::string& prefix, bool final_norm, uint64_t seed);

at::Tensor reference_layer(const overlap::TransformerConfig& config, const State& state,
                           const std::string& prefix, const at::Tensor& x);
at::Tensor reference_transformer(const overlap::TransformerConfig& config, const State& state,
                                 const at::Tensor& x);

}  // namespace domino::testing
