// Domino layers from C++: ranks are forked processes joined by a domino backend over a FileStore;
// each checks forward output, input gradient and every parameter gradient against the plain
// reference run on the unsharded weights.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <domino/ProcessGroupDomino.h>

#include <filesystem>
#include <sstream>

#include "overlap/Transformer.h"
#include "support/ForkRanks.h"
#include "support/ReferenceTransformer.h"

namespace domino::overlap {
namespace {

using testing::State;

struct Case {
  const char* name;
  TransformerConfig config;
};

TransformerConfig base() {
  TransformerConfig c;
  c.hidden_size = 48;
  c.num_attention_heads = 8;
  c.num_layers = 2;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto row = base();
  row.split = Split::kRow;
  row.micro_batches = 3;
  row.overlap = OverlapScope::kIntra;
  out.push_back({"row, 3 micro-batches, gelu, layernorm", row});
  auto column = base();
  column.split = Split::kColumn;
  column.micro_batches = 1;
  column.column_chunks = 4;
  column.activation = Activation::kSwiglu;
  column.bias = false;
  out.push_back({"column, 4 chunks, swiglu, no bias", column});
  auto two_d = base();
  two_d.split = Split::k2d;
  two_d.micro_batches = 2;
  two_d.column_chunks = 3;
  two_d.normalization = Normalization::kRmsNorm;
  two_d.num_query_groups = 4;
  two_d.rotary = true;
  out.push_back({"2d, GQA, rotary, rmsnorm, inter-layer", two_d});
  return out;
}

// "" when everything matches, else what does not.
std::string compare(torch::nn::Module& model, const State& state, const at::Tensor& out,
                    const at::Tensor& expected, const at::Tensor& x_grad,
                    const at::Tensor& reference_x_grad, const State& leaves) {
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
  (void)state;
  return said.str();
}

std::string run_rank(int rank, int world, const std::string& store_path,
                     const TransformerConfig& config, bool whole_stack) {
  at::set_num_threads(1);
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, world);
  auto options = ProcessGroupDomino::Options::create(std::chrono::seconds(30));
  options->group_name = "overlap-test";
  auto backend = c10::make_intrusive<ProcessGroupDomino>(store, rank, world, options);
  auto group = TensorParallelGroup::over_backend(backend);

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
    said = compare(*model, state, out, expected, xs.grad(), xr.grad(), leaves);
  } else {
    TransformerLayer model(config, group);
    load_unsharded(*model, state);
    auto out = model->forward(xs);
    (out * probe).sum().backward();
    said = compare(*model, state, out, expected, xs.grad(), xr.grad(), leaves);
  }
  backend->barrier()->wait();
  return said;
}

void expect_ranks_match(int world, bool whole_stack) {
  for (const auto& c : cases()) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("domino-overlap-" + std::to_string(getpid()) + "-" + std::to_string(world));
    std::filesystem::create_directories(dir);
    const std::string store = (dir / "store").string();
    auto outcomes = testing::fork_ranks(
        world, [&](int rank) { return run_rank(rank, world, store, c.config, whole_stack); },
        std::chrono::seconds(120));
    std::filesystem::remove_all(dir);
    ASSERT_EQ(outcomes.size(), static_cast<size_t>(world));
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(outcomes[rank].exit_code, 0)
          << c.name << " rank " << rank << ": " << outcomes[rank].message;
      EXPECT_EQ(outcomes[rank].message, "") << c.name << " rank " << rank;
    }
  }
}

TEST(OverlapLayers, LayerMatchesReferenceAtTensorParallel1) {
  expect_ranks_match(1, false);
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
  auto config = base();
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
