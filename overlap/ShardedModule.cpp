#include "ShardedModule.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <numeric>
#include <stdexcept>

namespace domino::overlap {

namespace {
std::string shape_text(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}
}  // namespace

at::Tensor take_shard(const at::Tensor& full, const ShardLayout& layout, int64_t rank,
                      int64_t size) {
  if (layout.dim < 0 || size == 1) return full;
  std::vector<at::Tensor> parts;
  int64_t offset = 0;
  for (int64_t segment : layout.segments) {
    const int64_t part = segment / size;
    parts.push_back(full.narrow(layout.dim, offset + rank * part, part));
    offset += segment;
  }
  return parts.size() == 1 ? parts[0].contiguous() : at::cat(parts, layout.dim);
}

ShardedModule::ShardedModule(TensorParallelGroupPtr group) : group_(std::move(group)) {}

const ShardLayout* ShardedModule::layout_of(const std::string& parameter) const {
  auto found = layouts_.find(parameter);
  return found == layouts_.end() ? nullptr : &found->second;
}

at::Tensor ShardedModule::register_sharded(const std::string& name, const at::Tensor& full,
                                           ShardLayout layout) {
  if (layout.dim >= 0) {
    const int64_t total = std::accumulate(layout.segments.begin(), layout.segments.end(), 0L);
    if (total != full.size(layout.dim)) {
      throw std::logic_error("segments of " + name + " do not cover its dim " +
                             std::to_string(layout.dim));
    }
    for (int64_t segment : layout.segments) {
      if (segment % group_->size() != 0) {
        throw std::invalid_argument(name + ": a segment of " + std::to_string(segment) +
                                    " does not split over " + group_->describe());
      }
    }
  }
  auto shard = take_shard(full, layout, group_->rank(), group_->size()).clone();
  layouts_[name] = std::move(layout);
  return register_parameter(name, shard);
}

at::Tensor shard_of(const torch::nn::Module& root, const std::string& name,
                    const at::Tensor& full) {
  const auto dot = name.rfind('.');
  const std::string owner = dot == std::string::npos ? "" : name.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
  for (const auto& item : root.named_modules()) {
    if (item.key() != owner) continue;
    const auto* parameter = item.value()->named_parameters(/*recurse=*/false).find(leaf);
    if (parameter == nullptr) break;
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    const ShardLayout* layout = sharded ? sharded->layout_of(leaf) : nullptr;
    // The unsharded shape this parameter's shard comes from.
    auto expected = parameter->sizes().vec();
    if (layout != nullptr && layout->dim >= 0) {
      expected[static_cast<size_t>(layout->dim)] =
          std::accumulate(layout->segments.begin(), layout->segments.end(), int64_t{0});
    }
    if (!full.sizes().equals(expected)) {
      throw std::invalid_argument("'" + name + "': the unsharded tensor has shape " +
                                  shape_text(full.sizes()) + ", this model's is " +
                                  shape_text(expected) +
                                  "; check hidden_size, heads, query groups and FFN size");
    }
    if (layout == nullptr) return full;
    return take_shard(full, *layout, sharded->group()->rank(), sharded->group()->size());
  }
  throw std::invalid_argument("no parameter named '" + name + "' in this model");
}

std::vector<std::pair<std::string, ShardLayout>> parameter_layouts(const torch::nn::Module& root) {
  std::vector<std::pair<std::string, ShardLayout>> out;
  for (const auto& item : root.named_modules()) {
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    for (const auto& parameter : item.value()->named_parameters(/*recurse=*/false)) {
      const ShardLayout* layout = sharded ? sharded->layout_of(parameter.key()) : nullptr;
      out.emplace_back(item.key().empty() ? parameter.key() : item.key() + "." + parameter.key(),
                       layout ? *layout : ShardLayout{});
    }
  }
  return out;
}

void load_unsharded(torch::nn::Module& root, const std::map<std::string, at::Tensor>& full) {
  c10::NoGradGuard no_grad;
  for (auto& item : root.named_parameters()) {
    auto found = full.find(item.key());
    if (found == full.end()) {
      throw std::invalid_argument("load_unsharded: no tensor for parameter '" + item.key() +
                                  "'; pass the unsharded state dict of the whole model");
    }
    try {
      item.value().copy_(shard_of(root, item.key(), found->second));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("load_unsharded: ") + e.what());
    }
  }
}

}  // namespace domino::overlap
