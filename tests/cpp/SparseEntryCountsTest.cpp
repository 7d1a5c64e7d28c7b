// A sparse all-reduce gathers each rank's entry count first and sizes the buffers it gathers the
// entries into by the largest (issue 36): a count no coalesced tensor of the agreed sizes can
// have (negative, or more entries than indexes) is refused, naming the rank, before anything is
// allocated by it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/SparseAllreduce.h"

namespace domino {
namespace {

at::Tensor counts(std::vector<int64_t> values) {
  return at::tensor(values, at::kLong);
}

std::string refusal(const at::Tensor& gathered, std::vector<int64_t> sizes, int64_t sparse_dim) {
  try {
    check_entry_counts(gathered, sizes, sparse_dim, "all_reduce (sparse) on group 'unit'");
  } catch (const c10::Error& e) {
    return e.what();
  }
  return "";
}

TEST(SparseEntryCounts, CountsACoalescedTensorCanHaveAreAccepted) {
  EXPECT_EQ(refusal(counts({0, 3, 100}), {10, 10, 4}, 2), "");
}

TEST(SparseEntryCounts, ANegativeCountIsRefusedNamingTheRank) {
  const std::string said = refusal(counts({3, -1}), {10, 10}, 2);
  EXPECT_NE(said.find("all_reduce (sparse) on group 'unit': rank 1 says its sparse tensor has -1 "
                      "entries"),
            std::string::npos)
      << said;
}

TEST(SparseEntryCounts, ACountAboveTheIndexesTheSizesHaveIsRefused) {
  // A terabyte of entries for a 10 x 10 tensor: the gathered buffers would be sized by it.
  const std::string said = refusal(counts({3, int64_t{1} << 40}), {10, 10}, 2);
  EXPECT_NE(said.find("rank 1 says its sparse tensor has 1099511627776 entries"), std::string::npos)
      << said;
  EXPECT_NE(said.find("holds 0 to 100"), std::string::npos) << said;
}

TEST(SparseEntryCounts, SizesWhoseIndexCountOverflowsBoundCountsAtTheLargestInteger) {
  const int64_t huge = int64_t{1} << 40;
  EXPECT_EQ(refusal(counts({int64_t{1} << 62}), {huge, huge}, 2), "");
  EXPECT_NE(refusal(counts({-5}), {huge, huge}, 2), "");
}

}  // namespace
}  // namespace domino
