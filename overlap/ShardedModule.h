// A torch::nn::Module whose parameters each know how they are cut over the tensor-parallel
// ranks, so a model can be loaded from (and compared against) unsharded weights by name.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "TensorParallelGroup.h"

namespace domino::overlap {

// dim < 0: replicated. Otherwise the full tensor's `dim` is made of `segments` (sizes summing to
// the dim), and each rank keeps the rank-th equal part of every segment, in order: a fused QKV
// weight keeps its q, k and v rows for its own heads.
// segment_names name the fused blocks ("q", "k", "v"; "gate", "up") where they have names,
// so checkpoints can store each as a tensor of its own.
struct ShardLayout {
  int64_t dim = -1;
  std::vector<int64_t> segments;
  std::vector<std::string> segment_names;
};

at::Tensor take_shard(const at::Tensor& full, const ShardLayout& layout, int64_t rank,
                      int64_t size);

class ShardedModule : public torch::nn::Module {
 public:
  // Nullptr for parameters registered some other way.
  const ShardLayout* layout_of(const std::string& parameter) const;
  const TensorParallelGroupPtr& group() const { return group_; }

 protected:
  explicit ShardedModule(TensorParallelGroupPtr group);
  at::Tensor register_sharded(const std::string& name, const at::Tensor& full, ShardLayout layout);

  TensorParallelGroupPtr group_;

 private:
  std::map<std::string, ShardLayout> layouts_;
};

// Every parameter of root by its dotted name, with how it is cut (dim < 0: replicated).
std::vector<std::pair<std::string, ShardLayout>> parameter_layouts(const torch::nn::Module& root);

// This rank's slice of the unsharded tensor `full` of parameter `name` (a dotted path in root).
at::Tensor shard_of(const torch::nn::Module& root, const std::string& name, const at::Tensor& full);

// Copies this rank's slice of every unsharded tensor into root's parameters; each parameter must
// be present, with the full shape. Throws std::invalid_argument naming what is missing or wrong.
void load_unsharded(torch::nn::Module& root, const std::map<std::string, at::Tensor>& full);

}  // namespace domino::overlap
