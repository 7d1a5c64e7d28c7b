// One pre-norm transformer layer that hides its tensor-parallel all-reduces (Domino). The batch
// is cut into micro-batches (row split) and/or the row-parallel outputs into column chunks
// (column split); the all-reduce of one slice runs while the next slice computes:
//
//   attn(mb0) -> AR  attn(mb1) -> AR  ...  wait(mb0) mlp(mb0) -> AR  wait(mb1) mlp(mb1) -> AR ...
//
// With overlap=inter the MLP reductions are left in flight for the next layer, whose attention on
// mb0 then hides the last micro-batch's reduction. Under a column split the hidden state stays in
// column parts between blocks, and the next block's norm and first GEMM start on part 0 while
// the later parts are still reducing (PartwiseNormLinear.h); in backward the input-gradient sums
// are cut alike and each is waited for only by the part's producer.
#pragma once

#include <torch/nn/pimpl.h>

#include <memory>
#include <vector>

#include "HiddenStates.h"
#include "MicroBatch.h"
#include "Norm.h"
#include "ParallelMLP.h"
#include "ShardedAttention.h"

namespace domino::overlap {

class TransformerLayerImpl : public ShardedModule {
 public:
  TransformerLayerImpl(const TransformerConfig& config, int64_t layer_number,
                       TensorParallelGroupPtr group, WeightInit& init,
                       std::shared_ptr<TensorParallelRng> rng);
  // Standalone: its own weights and dropout streams, from config.seed.
  TransformerLayerImpl(const TransformerConfig& config, TensorParallelGroupPtr group);

  // [s, b, h] -> [s, b, h] ([s/tp, b, h] under sequence parallelism), every reduction
  // finished. rotary_angles: see ShardedAttention::context.
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& rotary_angles = {});

  // The schedule over micro-batches; the result's reductions are finished for overlap=intra and
  // may be in flight for overlap=inter.
  std::vector<MicroBatch> forward_micro_batches(std::vector<MicroBatch> inputs,
                                                BatchDropout& dropout,
                                                const at::Tensor& rotary_angles = {});

  const TransformerConfig& config() const { return config_; }

  Norm input_norm{nullptr};
  ShardedAttention attention{nullptr};
  Norm post_attention_norm{nullptr};
  ParallelMLP mlp{nullptr};

 private:
  // forward_micro_batches under sequence parallelism: gathers and reduce-scatters instead of
  // all-reduces, scheduled the same way.
  std::vector<MicroBatch> forward_sequence_parallel(std::vector<MicroBatch> inputs,
                                                    BatchDropout& dropout,
                                                    const at::Tensor& rotary_angles);

  TransformerConfig config_;
  int64_t layer_number_;
  std::shared_ptr<TensorParallelRng> rng_;
};
TORCH_MODULE(TransformerLayer);

}  // namespace domino::overlap
