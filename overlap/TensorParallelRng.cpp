#include "TensorParallelRng.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Functions.h>

#include <mutex>

namespace domino::overlap {

namespace {
uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t hash_text(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

TensorParallelRng::TensorParallelRng(uint64_t seed, int64_t tensor_parallel_rank)
    : replicated_seed_(seed * 0x9E3779B97F4A7C15ULL + 1),
      sharded_seed_(seed * 0x9E3779B97F4A7C15ULL + 2 +
                    static_cast<uint64_t>(tensor_parallel_rank) * 0xD1B54A32D192ED03ULL) {}

uint64_t TensorParallelRng::pass_seed(const TensorParallelGroup& group, c10::Device device) const {
  uint64_t drawn = 0;
  {
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(cpu.mutex());
    drawn = cpu.get<at::CPUGeneratorImpl>()->random64();
  }
  if (group.size() == 1 || group.communication_dropped()) return drawn;
  // Rank 0's draw for everyone: ranks whose default generators differ (seeded per rank, or one
  // drew more) still drop the same elements of the replicated activations. In host memory where
  // the group takes it: reading a device result back would stall the stream every pass.
  const c10::Device where = group.reduces_host_memory() ? c10::Device(c10::kCPU) : device;
  at::Tensor agreed = at::zeros({1}, at::TensorOptions().dtype(at::kLong).device(where));
  if (group.rank() == 0) agreed.fill_(static_cast<int64_t>(drawn));
  wait_for(group.all_reduce_async(agreed));
  return static_cast<uint64_t>(agreed.item<int64_t>());
}

at::Generator TensorParallelRng::site_generator(DropoutStream stream, uint64_t pass_seed,
                                                const std::string& site, c10::Device device) const {
  const uint64_t base = stream == DropoutStream::kReplicated ? replicated_seed_ : sharded_seed_;
  at::Generator generator;
  {
    at::Generator source = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(source.mutex());
    generator = source.clone();
  }
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_current_seed(mix(base ^ mix(pass_seed ^ mix(hash_text(site)))));
  return generator;
}

BatchDropout::BatchDropout(int64_t full_batch, std::shared_ptr<const TensorParallelRng> rng,
                           const TensorParallelGroup& group, c10::Device device)
    : training_(true), full_batch_(full_batch), rng_(std::move(rng)) {
  pass_seed_ = rng_->pass_seed(group, device);
}

at::Tensor DropMask::apply(const at::Tensor& x) const {
  return dropped.defined() ? x.masked_fill(dropped, 0.0) * scale : x;
}

DropMask DropMask::columns(int64_t start, int64_t width) const {
  if (!dropped.defined()) return {};
  return {dropped.narrow(-1, start, width), scale};
}

DropMask BatchDropout::mask(const std::string& site, const at::Tensor& like, double p,
                            int64_t batch_dim, int64_t offset, DropoutStream stream) {
  if (!training_ || p <= 0.0 || !rng_) return {};
  auto found = masks_.find(site);
  if (found == masks_.end()) {
    auto shape = like.sizes().vec();
    shape[batch_dim] = full_batch_;
    const bool sequence_slice = stream == DropoutStream::kReplicated && shard_count_ > 1;
    if (sequence_slice) shape[0] *= shard_count_;
    // Bool, not the activation dtype: the mask is saved for backward, and a byte per element
    // is a quarter of fp32's.
    auto dropped = at::empty(shape, like.options().dtype(at::kBool));
    dropped.bernoulli_(p, rng_->site_generator(stream, pass_seed_, site, like.device()));
    if (sequence_slice) {
      // A copy of this rank's rows, so the whole sequence's mask is not kept for backward.
      const int64_t rows = like.size(0);
      dropped = dropped.narrow(0, shard_index_ * rows, rows).clone();
    }
    found = masks_.emplace(site, std::move(dropped)).first;
  }
  return {found->second.narrow(batch_dim, offset, like.size(batch_dim)), 1.0 / (1.0 - p)};
}

at::Tensor BatchDropout::apply(const std::string& site, const at::Tensor& x, double p,
                               int64_t batch_dim, int64_t offset, DropoutStream stream) {
  return mask(site, x, p, batch_dim, offset, stream).apply(x);
}

BatchDropout begin_dropout(bool training, double hidden_dropout, double attention_dropout,
                           const at::Tensor& hidden, const std::shared_ptr<TensorParallelRng>& rng,
                           const TensorParallelGroup& group) {
  if (!training || (hidden_dropout <= 0.0 && attention_dropout <= 0.0)) {
    return BatchDropout(false, hidden.size(1));
  }
  return BatchDropout(hidden.size(1), rng, group, hidden.device());
}

}  // namespace domino::overlap
