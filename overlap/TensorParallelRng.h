// Random streams for dropout under tensor parallelism. Activations that every TP rank holds in
// full (after an all-reduce) must drop the same elements on every rank, so they draw from a
// stream seeded alike everywhere; activations over a rank's own heads draw from a stream of
// their own, so different heads get independent masks.
//
// Each forward pass (in training, with a dropout rate above 0) takes a pass seed from PyTorch's
// default CPU generator, as torch.nn.Dropout takes its randomness from the default generators,
// and tensor-parallel rank 0's seed is the group's. So torch.utils.checkpoint, which saves the
// default generators' state and restores it before recomputing, makes the recompute drop exactly
// what the forward dropped, and masks are deterministic under config.seed and torch.manual_seed.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "TensorParallelGroup.h"

namespace domino::overlap {

enum class DropoutStream { kReplicated, kSharded };

class TensorParallelRng {
 public:
  TensorParallelRng(uint64_t seed, int64_t tensor_parallel_rank);

  // The seed of a forward pass: drawn from the default CPU generator and agreed with the
  // group's rank 0 (one small all-reduce over group, on device).
  uint64_t pass_seed(const TensorParallelGroup& group, c10::Device device) const;
  // A generator for one dropout site of one pass, on device.
  at::Generator site_generator(DropoutStream stream, uint64_t pass_seed, const std::string& site,
                               c10::Device device) const;

 private:
  uint64_t replicated_seed_;
  uint64_t sharded_seed_;
};

// Which elements one dropout site drops (bool, a byte per element) and how the kept ones scale.
struct DropMask {
  at::Tensor dropped;  // undefined: nothing is dropped
  double scale = 1.0;

  at::Tensor apply(const at::Tensor& x) const;
  // The mask of columns [start, start + width) of the last dimension.
  DropMask columns(int64_t start, int64_t width) const;
};

// Dropout over one forward pass whose masks do not depend on how the batch is cut into
// micro-batches: each site draws one mask for the whole batch, and every micro-batch takes its
// slice. So Domino with 4 micro-batches drops exactly what the unsplit model drops.
class BatchDropout {
 public:
  // A pass that drops nothing (evaluation, or no dropout anywhere) takes no seed.
  BatchDropout(bool training, int64_t full_batch) : training_(training), full_batch_(full_batch) {}
  // A training pass with dropout: takes its seed (rng.pass_seed) now, before any mask is drawn.
  BatchDropout(int64_t full_batch, std::shared_ptr<const TensorParallelRng> rng,
               const TensorParallelGroup& group, c10::Device device);
  // A training pass with dropout under a seed taken before (a layer recomputed on its own).
  BatchDropout(int64_t full_batch, std::shared_ptr<const TensorParallelRng> rng, uint64_t pass_seed)
      : training_(true), full_batch_(full_batch), rng_(std::move(rng)), pass_seed_(pass_seed) {}

  // `x` is the micro-batch whose rows [offset, offset + x.size(batch_dim)) of the full batch
  // lie along batch_dim.
  at::Tensor apply(const std::string& site, const at::Tensor& x, double p, int64_t batch_dim,
                   int64_t offset, DropoutStream stream);
  // Sequence parallelism: activations hold this rank's run `index` of `count` equal runs of the
  // sequence (dim 0). A replicated mask is drawn for the whole sequence and this rank keeps its
  // rows, so the same elements drop as without sequence parallelism.
  void set_sequence_shard(int64_t index, int64_t count) {
    shard_index_ = index;
    shard_count_ = count;
  }
  // The mask apply() uses, for a micro-batch shaped like `like`.
  DropMask mask(const std::string& site, const at::Tensor& like, double p, int64_t batch_dim,
                int64_t offset, DropoutStream stream);

 private:
  bool training_;
  int64_t full_batch_;
  std::shared_ptr<const TensorParallelRng> rng_;
  uint64_t pass_seed_ = 0;
  int64_t shard_index_ = 0;
  int64_t shard_count_ = 1;
  std::map<std::string, at::Tensor> masks_;
};

// The dropout of one forward pass of a module built from config, over input `hidden`.
BatchDropout begin_dropout(bool training, double hidden_dropout, double attention_dropout,
                           const at::Tensor& hidden, const std::shared_ptr<TensorParallelRng>& rng,
                           const TensorParallelGroup& group);

}  // namespace domino::overlap
