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

#include "overlap/PartwiseNormLinear.h"
#include "overlap/Transformer.h"
#include "support/ForkRanks.h"
#include "support/LayerStep.h"
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
          name << split_names[static_cast<int>(schedule.split)] << " mb=" << c.micro_batch_count()
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

std::string check_case(const TensorParallelGroupPtr& group, const TransformerConfig& config,
                       bool whole_stack) {
  const State state = whole_stack
                          ? testing::random_state(config, config.num_layers, "layers.", true, 7)
                          : testing::random_state(config, 1, "", false, 7);
  at::manual_seed(3);
  const auto x = at::randn({8, 5, config.hidden_size});
  const auto probe = at::randn({8, 5, config.hidden_size});
  State leaves;
  for (const auto& [name, tensor] : state) leaves[name] = tensor.clone().set_requires_grad(true);
  auto xr = x.clone().set_requires_grad(true);
  auto expected = whole_stack ? testing::reference_transformer(config, leaves, xr)
                              : testing::reference_layer(config, leaves, "", xr);
  (expected * probe).sum().backward();

  // Sequence parallelism: this rank holds its rows of the sequence, in and out.
  auto mine = [&](const at::Tensor& t) {
    if (!config.sequence_parallel) return t;
    const int64_t rows = t.size(0) / group->size();
    return t.narrow(0, group->rank() * rows, rows);
  };
  auto xs = mine(x).clone().set_requires_grad(true);
  std::string said;
  if (whole_stack) {
    Transformer model(config, group);
    load_unsharded(*model, state);
    auto out = model->forward(xs);
    (out * mine(probe)).sum().backward();
    said = testing::compare_step(*model, out, mine(expected), xs.grad(), mine(xr.grad()), leaves,
                                 2e-4);
  } else {
    TransformerLayer model(config, group);
    load_unsharded(*model, state);
    auto out = model->forward(xs);
    (out * mine(probe)).sum().backward();
    said = testing::compare_step(*model, out, mine(expected), xs.grad(), mine(xr.grad()), leaves,
                                 2e-4);
  }
  return said;
}

// Every case on one group; "" when all match, else each failing case and what is off.
std::string run_rank(int rank, int world, const std::string& store_path, bool whole_stack,
                     bool sequence_parallel) {
  at::set_num_threads(1);
  auto backend = testing::domino_rank(rank, world, store_path, "overlap-test");
  auto group = TensorParallelGroup::over_backend(backend);
  std::string said;
  for (auto c : cases()) {
    c.config.sequence_parallel = sequence_parallel;
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

void expect_ranks_match(int world, bool whole_stack, bool sequence_parallel = false) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("domino-overlap-" + std::to_string(getpid()) + "-" + std::to_string(world));
  std::filesystem::create_directories(dir);
  const std::string store = (dir / "store").string();
  auto outcomes = testing::fork_ranks(
      world, [&](int rank) { return run_rank(rank, world, store, whole_stack, sequence_parallel); },
      std::chrono::seconds(240));
  // POSIX, not std::filesystem::remove_all: torch 2.11's libtorch.so exports its own copy of it,
  // which the test binds to and which crashes on a directory with files in it.
  remove_directory(dir.string());
  testing::expect_every_rank_silent(outcomes, world);
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
// The hidden state [s/tp, b, h] between blocks: gathered before the column-parallel GEMMs,
// reduce-scattered after the row-parallel ones, every split.
TEST(OverlapLayers, SequenceParallelLayerMatchesReferenceAtTensorParallel2) {
  expect_ranks_match(2, false, true);
}
TEST(OverlapLayers, SequenceParallelStackMatchesReferenceAtTensorParallel4) {
  expect_ranks_match(4, true, true);
}

// The norm fused into the GEMM over column parts, against layer_norm / rms_norm then linear,
// both in float32, with float64 as the truth: on inputs far from zero mean (where a one-pass
// variance would cancel) its error in the output and every gradient stays within a few times
// the plain float32 composition's.
std::string partwise_norm_error(Normalization kind, double offset) {
  at::set_num_threads(1);
  const auto dir =
      std::filesystem::temp_directory_path() / ("domino-partwise-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto store = c10::make_intrusive<c10d::FileStore>((dir / "store").string(), 1);
  auto backend = c10::make_intrusive<ProcessGroupDomino>(
      store, 0, 1, ProcessGroupDomino::Options::create(std::chrono::seconds(30)));
  auto group = TensorParallelGroup::over_backend(backend);
  WeightInit init(5, 0.02, at::kFloat);
  const int64_t hidden = 48;
  Norm norm(hidden, kind, 1e-5, group, init);
  ColumnParallelLinear linear(hidden, std::vector<int64_t>{32}, true, group, init);
  at::manual_seed(11);
  const auto x64 = at::randn({6, 5, hidden}, at::kDouble) * 3 + offset;
  const auto gain64 = at::rand({hidden}, at::kDouble) + 0.5;
  const auto shift64 = at::randn({hidden}, at::kDouble);
  const auto weight64 = at::randn({32, hidden}, at::kDouble) * 0.1;
  const auto bias64 = at::randn({32}, at::kDouble);
  const auto probe = at::randn({6, 5, 32}, at::kDouble);
  const bool layer_norm = kind == Normalization::kLayerNorm;
  // Output, then the gradients of x, gain, (shift,) weight and bias, by one of three paths.
  auto run = [&](const std::string& path) {
    const auto dtype = path == "truth" ? at::kDouble : at::kFloat;
    {
      torch::NoGradGuard no_grad;
      norm->weight.set_data(gain64.to(dtype));
      if (layer_norm) norm->bias.set_data(shift64.to(dtype));
      linear->weight.set_data(weight64.to(dtype));
      linear->bias.set_data(bias64.to(dtype));
    }
    for (auto& p : norm->parameters()) p.mutable_grad() = at::Tensor();
    for (auto& p : linear->parameters()) p.mutable_grad() = at::Tensor();
    auto x = x64.to(dtype).clone().set_requires_grad(true);
    at::Tensor out;
    if (path == "partwise") {
      auto input = MicroBatch::ready(x, 0);
      input.cut_columns(4);
      out = partwise_norm_linear(input, *norm, *linear);
    } else {
      out = at::linear(norm->forward(x), linear->weight, linear->bias);
    }
    (out * probe.to(dtype)).sum().backward();
    std::vector<at::Tensor> got{out, x.grad(), norm->weight.grad(), linear->weight.grad(),
                                linear->bias.grad()};
    if (layer_norm) got.push_back(norm->bias.grad());
    for (auto& t : got) t = t.to(at::kDouble);
    return got;
  };
  const auto truth = run("truth");
  const auto plain = run("plain");
  const auto partwise = run("partwise");
  const char* names[] = {"output", "x grad", "gain grad", "weight grad", "bias grad", "shift grad"};
  std::ostringstream said;
  for (size_t i = 0; i < truth.size(); ++i) {
    const double scale = std::max(truth[i].abs().max().item<double>(), 1.0);
    const double plain_error = (plain[i] - truth[i]).abs().max().item<double>() / scale;
    const double partwise_error = (partwise[i] - truth[i]).abs().max().item<double>() / scale;
    if (partwise_error > 4 * plain_error + 1e-6) {
      said << names[i] << ": partwise " << partwise_error << " against plain " << plain_error
           << "; ";
    }
  }
  remove_directory(dir.string());
  return said.str();
}

TEST(OverlapLayers, PartwiseNormLinearIsAsAccurateAsThePlainNormThenLinear) {
  for (auto kind : {Normalization::kLayerNorm, Normalization::kRmsNorm}) {
    for (double offset : {0.0, 300.0}) {
      auto outcomes = testing::fork_ranks(
          1, [&](int) { return partwise_norm_error(kind, offset); }, std::chrono::seconds(60));
      ASSERT_EQ(outcomes.size(), 1u);
      EXPECT_EQ(outcomes[0].exit_code, 0) << outcomes[0].message;
      EXPECT_EQ(outcomes[0].message, "")
          << (kind == Normalization::kLayerNorm ? "layernorm" : "rmsnorm") << " offset " << offset;
    }
  }
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
