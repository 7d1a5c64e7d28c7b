// Domino layers from C++ over the whole matrix of splits, activations, norms and GQA: ranks are
// forked processes joined by a domino backend over a FileStore;
// each checks forward output, input gradient and every parameter gradient against the plain
// reference run on the unsharded weights.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <domino/ProcessGroupDomino.h>

#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "overlap/Transformer.h"
#include "support/ForkRanks.h"
#include "support/ReferenceTransformer.h"

namespace domino::overlap {
namespace {

using testing::State;

struct Case {
  std::string name;
  TransformerConfig config;
};

// Every split with 1 to 4 micro-batches or column chunks, x gelu/swiglu x layernorm/rmsnorm x
// GQA off/on; rotary, bias and the overlap scope alternate.
std::vector<Case> cases() {
  struct Schedule {
    Split split;
    int64_t micro_batches, column_chunks;
  };
  const std::vector<Schedule> schedules{
      {Split::kRow, 1, 1},    {Split::kRow, 2, 1},    {Split::kRow, 3, 1},
      {Split::kRow, 4, 1},    {Split::kColumn, 1, 1}, {Split::kColumn, 1, 2},
      {Split::kColumn, 1, 3}, {Split::kColumn, 1, 4}, {Split::k2d, 2, 2},
      {Split::k2d, 3, 3},     {Split::k2d, 4, 2},     {Split::k2d, 1, 4}};
  const char* split_names[] = {"row", "column", "2d"};
  std::vector<Case> out;
  int index = 0;
  for (const auto& schedule : schedules) {
    for (auto activation : {Activation::kGelu, Activation::kSwiglu}) {
      for (auto norm : {Normalization::kLayerNorm, Normalization::kRmsNorm}) {
        for (bool gqa : {false, true}) {
          TransformerConfig c;
          c.hidden_size = 48;
          c.num_attention_heads = 8;
          c.num_query_groups = gqa ? 4 : 0;
          c.num_layers = 2;
          c.activation = activation;
          c.normalization = norm;
          c.split = schedule.split;
          c.micro_batches = schedule.micro_batches;
          c.column_chunks = schedule.column_chunks;
          c.rotary = index % 2 == 0;
          c.bias = index % 3 != 0;
          c.overlap = (index / 2) % 2 == 0 ? OverlapScope::kInter : OverlapScope::kIntra;
          std::ostringstream name;
          name << split_names[static_cast<int>(schedule.split)] << " mb=" << c.micro_batches
               << " cc=" << c.column_chunks
               << (activation == Activation::kGelu ? " gelu" : " swiglu")
               << (norm == Normalization::kLayerNorm ? " layernorm" : " rmsnorm")
               << (gqa ? " gqa" : "") << (c.rotary ? " rope" : "") << (c.bias ? " bias" : "")
               << (c.overlap == OverlapScope::kInter ? " inter" : " intra");
          out.push_back({name.str(), c});
          ++index;
        }
      }
    }
  }
  return out;
}

// "" when everything matches, else what does not.
std::string compare(torch::nn::Module& model, const at::Tensor& out, const at::Tensor& expected,
                    const at::Tensor& x_grad, const at::Tensor& reference_x_grad,
                    const State& leaves) {
  std::ostringstream said;
  auto check = [&](const std::string& what, const at::Tensor& got, const at::Tensor& want) {
    if (!got.defined() || !got.sizes().equals(want.sizes())) {
      said << what << ": missing or wrong shape; ";
      return;
    }
    const double err = (got - want).abs().max().item<double>();
    const double scale = std::max(want.abs().max().item<double>(), 1.0);
    if (err > 2e-4 * scale) said << what << " off by " << err << "; ";
  };
  check("output", out, expected);
  check("input grad", x_grad, reference_x_grad);
  for (const auto& item : model.named_parameters()) {
    check(item.key() + " grad", item.value().grad(),
          shard_of(model, item.key(), leaves.at(item.key()).grad()));
  }
  return said.str();
}

std::string check_case(const TensorParallelGroupPtr& group, const TransformerConfig& config,
                       bool whole_stack) {
  const State state = whole_stack
                          ? testing::random_state(config, config.num_layers, "layers.", true, 7)
                          : testing::random_state(config, 1, "", false, 7);
  at::manual_seed(3);
  const auto x = at::randn({6, 5, config.hidden_size});
  const auto probe = at::randn({6, 5, config.hidden_size});
  State leaves;
  for (const auto& [name, tensor] : state) leaves[name] = tensor.clone().set_requires_grad(true);
  auto xr = x.clone().set_requires_grad(true);
  auto expected = whole_stack ? testing::reference_transformer(config, leaves, xr)
                              : testing::reference_layer(config, leaves, "", xr);
  (expected * probe).sum().backward();

  auto xs = x.clone().set_requires_grad(true);
  std::string said;
  if (whole_stack) {
    Transformer model(config, group);
    load_unsharded(*model, state);
    auto out = model->forward(xs);
    (out * probe).sum().backward();
    said = compare(*model, out, expected, xs.grad(), xr.grad(), leaves);
  } else {
    TransformerLayer model(config, group);
    load_unsharded(*model, state);
    auto out = model->forward(xs);
    (out * probe).sum().backward();
    said = compare(*model, out, expected, xs.grad(), xr.grad(), leaves);
  }
  return said;
}

// Every case on one group; "" when all match, else each failing case and what is off.
std::string run_rank(int rank, int world, const std::string& store_path, bool whole_stack) {
  at::set_num_threads(1);
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, world);
  auto options = ProcessGroupDomino::Options::create(std::chrono::seconds(30));
  options->group_name = "overlap-test";
  auto backend = c10::make_intrusive<ProcessGroupDomino>(store, rank, world, options);
  auto group = TensorParallelGroup::over_backend(backend);
  std::string said;
  for (const auto& c : cases()) {
    const auto off = check_case(group, c.config, whole_stack);
    if (!off.empty()) said += c.name + ": " + off + "\n";
  }
  backend->barrier()->wait();
  return said;
}

void remove_directory(const std::string& dir) {
  if (DIR* listing = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(listing)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(listing);
  }
  rmdir(dir.c_str());
}

void expect_ranks_match(int world, bool whole_stack) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("domino-overlap-" + std::to_string(getpid()) + "-" + std::to_string(world));
  std::filesystem::create_directories(dir);
  const std::string store = (dir / "store").string();
  auto outcomes = testing::fork_ranks(
      world, [&](int rank) { return run_rank(rank, world, store, whole_stack); },
      std::chrono::seconds(240));
  // POSIX, not std::filesystem::remove_all: torch 2.11's libtorch.so exports its own copy of it,
  // which the test binds to and which crashes on a directory with files in it.
  remove_directory(dir.string());
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(world));
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(outcomes[rank].exit_code, 0) << "rank " << rank << ": " << outcomes[rank].message;
    EXPECT_EQ(outcomes[rank].message, "") << "rank " << rank;
  }
  EXPECT_EQ(cases().size(), 96u);
}

TEST(OverlapLayers, LayerMatchesReferenceAtTensorParallel1) {
  expect_ranks_match(1, false);
}
TEST(OverlapLayers, StackMatchesReferenceAtTensorParallel1) {
  expect_ranks_match(1, true);
}
TEST(OverlapLayers, LayerMatchesReferenceAtTensorParallel2) {
  expect_ranks_match(2, false);
}
TEST(OverlapLayers, StackMatchesReferenceAtTensorParallel2) {
  expect_ranks_match(2, true);
}
TEST(OverlapLayers, StackMatchesReferenceAtTensorParallel4) {
  expect_ranks_match(4, true);
}

TEST(OverlapLayers, UnshardableHeadsAreRejectedBeforeAnyWeightExists) {
  TransformerConfig config;
  config.hidden_size = 48;
  config.num_attention_heads = 6;
  try {
    config.validate(4);
    FAIL() << "accepted 6 heads over 4 ranks";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_attention_heads=6"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace domino::overlap
