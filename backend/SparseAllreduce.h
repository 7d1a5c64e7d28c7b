// All-reduce (SUM) of a sparse COO tensor, as Gloo does it: every rank's indices and values are
// gathered, concatenated and coalesced, so duplicates across ranks add up.
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace domino {

class RoutedComm;

// Replaces tensor's contents with the coalesced sum over the group's ranks. Ranks whose tensors
// disagree on shape, sparse/dense dimensions or dtype get an error naming the first that differs.
void allreduce_sparse_sum(RoutedComm& comm, at::Tensor& tensor, int rank, int size,
                          const std::string& where);

// Throws naming the rank unless every rank's entry count (counts[r], as gathered from the
// ranks) fits a coalesced sparse tensor of `sizes` with sparse_dim sparse dimensions: the counts
// size the buffers the entries are gathered into.
void check_entry_counts(const at::Tensor& counts, at::IntArrayRef sizes, int64_t sparse_dim,
                        const std::string& where);

}  // namespace domino
