// Random streams for dropout under tensor parallelism. Activations that every TP rank holds in
// full (after an all-reduce) must drop the same elements on every rank, so they draw from a
// stream seeded alike everywhere; activations over a rank's own heads draw from a stream of
// their own, so different heads get independent masks. Both are deterministic under the seed.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace domino::overlap {

class TensorParallelRng {
 public:
  TensorParallelRng(uint64_t seed, int64_t tensor_parallel_rank);

  at::Generator replicated(c10::Device device);
  at::Generator sharded(c10::Device device);

 private:
  at::Generator make(c10::Device device, uint64_t seed);
  at::Generator stream(const char* kind, c10::Device device, uint64_t seed);

  uint64_t replicated_seed_;
  uint64_t sharded_seed_;
  std::mutex mutex_;
  std::map<std::string, at::Generator> generators_;
};

// Which elements one dropout site drops (bool, a byte per element) and how the kept ones scale.
struct DropMask {
  at::Tensor dropped;  // undefined: nothing is dropped
  double scale = 1.0;

  at::Tensor apply(const at::Tensor& x) const;
};

// Dropout over one forward pass whose masks do not depend on how the batch is cut into
// micro-batches: each site draws one mask for the whole batch, and every micro-batch takes its
// slice. So Domino with 4 micro-batches drops exactly what the unsplit model drops.
class BatchDropout {
 public:
  BatchDropout(bool training, int64_t full_batch) : training_(training), full_batch_(full_batch) {}

  // `x` is the micro-batch whose rows [offset, offset + x.size(batch_dim)) of the full batch
  // lie along batch_dim.
  at::Tensor apply(const std::string& site, const at::Tensor& x, double p, int64_t batch_dim,
                   int64_t offset, at::Generator generator);
  // The mask apply() uses, for a micro-batch shaped like `like`.
  DropMask mask(const std::string& site, const at::Tensor& like, double p, int64_t batch_dim,
                int64_t offset, at::Generator generator);

 private:
  bool training_;
  int64_t full_batch_;
  std::map<std::string, at::Tensor> masks_;
};

}  // namespace domino::overlap
