// Sequence parallelism (Megatron's): between blocks each tensor-parallel rank holds its slice of
// the sequence, [s/tp, b, h]. A column-parallel GEMM takes the whole sequence, so its input is
// all-gathered along the sequence first; a row-parallel GEMM's partial sums are reduce-scattered
// along it instead of all-reduced. Norms and dropouts then touch s/tp rows per rank.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

#include "TensorParallelGroup.h"
#include "TensorParallelRng.h"
#include "TransformerConfig.h"

namespace domino::overlap {

// An all-gather along the sequence in flight. The local rows are cut into chunks, each gathered
// on its own, so a consumer can compute on chunk k while chunk k+1 is still on the wire.
// Chunk k holds, for every rank in order, that rank's k-th run of rows: [tp * rows_k, b, h].
struct SequenceGather {
  at::Tensor local;                // this rank's rows, as the caller passed them
  std::vector<int64_t> rows;       // each chunk's rows per rank
  std::vector<at::Tensor> chunks;  // the gathered chunks (filled once waited for)
  std::vector<at::Tensor> sent;    // this rank's contiguous chunks, alive while in flight
  std::vector<c10::intrusive_ptr<c10d::Work>> works;

  int64_t local_rows() const { return local.size(0); }
  // Waits for chunk k.
  const at::Tensor& chunk(size_t k);
  // Where chunk k's rows go in the whole sequence: [tp, rows_k, ...] view of `whole`.
  at::Tensor place_of(const at::Tensor& whole, size_t k) const;
};

// Starts gathering `local` ([s/tp, b, h]) in `chunks` chunks (fewer if the rows are fewer).
SequenceGather start_sequence_gather(const at::Tensor& local, const TensorParallelGroup& group,
                                     int64_t chunks);

// The whole sequence gathered, in order: [s, b, h].
at::Tensor gather_sequence(const at::Tensor& local, const TensorParallelGroup& group);

// A pass's dropout under sequence parallelism draws replicated masks for the whole sequence and
// keeps this rank's rows (BatchDropout::set_sequence_shard); a no-op otherwise.
void shard_dropout(BatchDropout& dropout, const TransformerConfig& config,
                   const TensorParallelGroup& group);

// Replicated parameters that a rank applies to its own rows only (norms, the biases added after
// a reduce-scatter) get partial gradients there: sum each over the group in backward, as
// Megatron's finalize_model_grads does for the parameters it marks sequence_parallel.
void sum_gradients_over_group(const std::vector<at::Tensor>& parameters,
                              const TensorParallelGroupPtr& group);

}  // namespace domino::overlap
