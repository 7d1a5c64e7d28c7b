#include "TensorParallelRng.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>

namespace domino::overlap {

TensorParallelRng::TensorParallelRng(uint64_t seed, int64_t tensor_parallel_rank)
    : replicated_seed_(seed * 0x9E3779B97F4A7C15ULL + 1),
      sharded_seed_(seed * 0x9E3779B97F4A7C15ULL + 2 +
                    static_cast<uint64_t>(tensor_parallel_rank) * 0xD1B54A32D192ED03ULL) {}

at::Generator TensorParallelRng::make(c10::Device device, uint64_t seed) {
  auto generator = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(seed);
  return generator;
}

at::Generator TensorParallelRng::stream(const char* kind, c10::Device device, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = std::string(kind) + "/" + device.str();
  auto found = generators_.find(key);
  if (found == generators_.end()) found = generators_.emplace(key, make(device, seed)).first;
  return found->second;
}

at::Generator TensorParallelRng::replicated(c10::Device device) {
  return stream("replicated", device, replicated_seed_);
}

at::Generator TensorParallelRng::sharded(c10::Device device) {
  return stream("sharded", device, sharded_seed_);
}

at::Tensor DropMask::apply(const at::Tensor& x) const {
  return dropped.defined() ? x.masked_fill(dropped, 0.0) * scale : x;
}

DropMask BatchDropout::mask(const std::string& site, const at::Tensor& like, double p,
                            int64_t batch_dim, int64_t offset, at::Generator generator) {
  if (!training_ || p <= 0.0) return {};
  auto found = masks_.find(site);
  if (found == masks_.end()) {
    auto shape = like.sizes().vec();
    shape[batch_dim] = full_batch_;
    // Bool, not the activation dtype: the mask is saved for backward, and a byte per element
    // is a quarter of fp32's.
    auto dropped = at::empty(shape, like.options().dtype(at::kBool));
    dropped.bernoulli_(p, generator);  // the kernel locks the generator
    found = masks_.emplace(site, std::move(dropped)).first;
  }
  return {found->second.narrow(batch_dim, offset, like.size(batch_dim)), 1.0 / (1.0 - p)};
}

at::Tensor BatchDropout::apply(const std::string& site, const at::Tensor& x, double p,
                               int64_t batch_dim, int64_t offset, at::Generator generator) {
  return mask(site, x, p, batch_dim, offset, std::move(generator)).apply(x);
}

}  // namespace domino::overlap
