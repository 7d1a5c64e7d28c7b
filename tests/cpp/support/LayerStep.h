// What the layer tests share: a forked rank's domino backend, one training step of a layer
// checked against a plain reference, and the verdict over every rank.
#pragma once

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <domino/ProcessGroupDomino.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "overlap/ShardedModule.h"
#include "support/ForkRanks.h"

namespace domino::testing {

// This rank's domino backend, its group joined over the FileStore at store_path.
inline c10::intrusive_ptr<ProcessGroupDomino> domino_rank(int rank, int world,
                                                          const std::string& store_path,
                                                          const std::string& group_name) {
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, world);
  auto options = ProcessGroupDomino::Options::create(std::chrono::seconds(30));
  options->group_name = group_name;
  return c10::make_intrusive<ProcessGroupDomino>(store, rank, world, options);
}

// "" when the output, the input gradient and every parameter's gradient (against this rank's
// shard of the reference leaf's) are within `tolerance` times the larger of 1 and the expected
// tensor's largest magnitude; else what is off.
inline std::string compare_step(const torch::nn::Module& model, const at::Tensor& out,
                                const at::Tensor& expected, const at::Tensor& x_grad,
                                const at::Tensor& reference_x_grad,
                                const std::map<std::string, at::Tensor>& reference_leaves,
                                double tolerance) {
  std::ostringstream said;
  auto check = [&](const std::string& what, const at::Tensor& got, const at::Tensor& want) {
    if (!got.defined() || !got.sizes().equals(want.sizes())) {
      said << what << ": missing or wrong shape; ";
      return;
    }
    const double err = (got - want).abs().max().item<double>();
    const double scale = std::max(want.abs().max().item<double>(), 1.0);
    if (err > tolerance * scale) said << what << " off by " << err << "; ";
  };
  check("output", out, expected);
  check("input grad", x_grad, reference_x_grad);
  for (const auto& item : model.named_parameters()) {
    check(item.key() + " grad", item.value().grad(),
          overlap::shard_of(model, item.key(), reference_leaves.at(item.key()).grad()));
  }
  return said.str();
}

// Every one of `world` ranks exited 0 and reported nothing.
inline void expect_every_rank_silent(const std::vector<RankOutcome>& outcomes, int world) {
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(world));
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(outcomes[rank].exit_code, 0) << "rank " << rank << ": " << outcomes[rank].message;
    EXPECT_EQ(outcomes[rank].message, "") << "rank " << rank;
  }
}

}  // namespace domino::testing
