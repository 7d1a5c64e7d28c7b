#include "SparseAllreduce.h"

#include <c10/util/Exception.h>

#include <limits>
#include <vector>

#include "TensorBuffer.h"
#include "engine/RoutedComm.h"

namespace domino {

namespace {
// What each rank tells the others first, the same length on every rank: its entry count, then
// what all must agree on (the extents come second, once the dimension counts agree).
at::Tensor describe(const at::Tensor& sparse) {
  return at::tensor(std::vector<int64_t>{sparse._nnz(), sparse.sparse_dim(), sparse.dense_dim(),
                                         static_cast<int64_t>(sparse.scalar_type())},
                    at::kLong);
}

at::Tensor gathered(RoutedComm& comm, const at::Tensor& mine, int size) {
  at::Tensor all = at::empty({size, mine.numel()}, mine.options());
  StagedTensor in(mine.contiguous());
  StagedTensor out(all, /*copy_in=*/false);
  domino_buffer_t recv = out.buffer();
  comm.collective(make_call(topology::Collective::kAllGather, in.buffer(), recv));
  out.publish();
  return all;
}

// rows of t (along dim) padded with zeros to rows entries, so that every rank sends alike.
at::Tensor padded(const at::Tensor& t, int64_t dim, int64_t rows) {
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  shape[static_cast<size_t>(dim)] = rows;
  at::Tensor out = at::zeros(shape, t.options());
  out.narrow(dim, 0, t.size(dim)).copy_(t);
  return out;
}
}  // namespace

void check_entry_counts(const at::Tensor& counts, at::IntArrayRef sizes, int64_t sparse_dim,
                        const std::string& where) {
  // A coalesced tensor has at most one entry per index of its sparse dimensions.
  int64_t most_entries = 1;
  for (int64_t d = 0; d < sparse_dim && d < static_cast<int64_t>(sizes.size()); ++d) {
    if (__builtin_mul_overflow(most_entries, sizes[static_cast<size_t>(d)], &most_entries)) {
      most_entries = std::numeric_limits<int64_t>::max();
      break;
    }
  }
  for (int64_t r = 0; r < counts.numel(); ++r) {
    const int64_t n = counts[r].item<int64_t>();
    TORCH_CHECK(n >= 0 && n <= most_entries, where, ": rank ", r, " says its sparse tensor has ", n,
                " entries, but a coalesced one of sizes ", sizes, " with ", sparse_dim,
                " sparse dimension(s) holds 0 to ", most_entries,
                "; its message was corrupted or it runs another torch-domino build. Destroy the "
                "group and create a new one.");
  }
}

void allreduce_sparse_sum(RoutedComm& comm, at::Tensor& tensor, int rank, int size,
                          const std::string& where) {
  const at::Tensor input = tensor.coalesce();
  const at::Tensor mine = describe(input);
  const at::Tensor all = gathered(comm, mine, size);
  const at::Tensor extents = at::tensor(input.sizes().vec(), at::kLong);
  auto disagree = [&](int r) {
    TORCH_CHECK(false, where, ": rank ", r, "'s sparse tensor differs from rank ", rank,
                "'s in shape, sparse/dense dimensions or dtype (rank ", rank, ": sizes ",
                input.sizes(), ", sparse_dim ", input.sparse_dim(), ", ", input.scalar_type(),
                "); every rank must pass a tensor of the same layout");
  };
  for (int r = 0; r < size; ++r) {
    if (!at::equal(all[r].narrow(0, 1, 3), mine.narrow(0, 1, 3))) disagree(r);
  }
  const at::Tensor all_extents = gathered(comm, extents, size);
  for (int r = 0; r < size; ++r) {
    if (!at::equal(all_extents[r], extents)) disagree(r);
  }
  const at::Tensor counts = all.select(1, 0);
  check_entry_counts(counts, input.sizes(), input.sparse_dim(), where);
  const int64_t most = counts.max().item<int64_t>();
  const at::Tensor indices = gathered(comm, padded(input._indices(), 1, most), size);
  const at::Tensor values =
      gathered(comm, padded(input._values(), 0, most).reshape({-1}), size).reshape([&] {
        std::vector<int64_t> shape = {size, most};
        for (int64_t d = 1; d < input._values().dim(); ++d)
          shape.push_back(input._values().size(d));
        return shape;
      }());
  std::vector<at::Tensor> index_parts, value_parts;
  for (int r = 0; r < size; ++r) {
    const int64_t n = counts[r].item<int64_t>();
    index_parts.push_back(indices[r].reshape({input.sparse_dim(), most}).narrow(1, 0, n));
    value_parts.push_back(values[r].narrow(0, 0, n));
  }
  const at::Tensor sum = at::sparse_coo_tensor(at::cat(index_parts, 1), at::cat(value_parts, 0),
                                               input.sizes(), input.options())
                             .coalesce();
  tensor.copy_(sum);
}

}  // namespace domino
