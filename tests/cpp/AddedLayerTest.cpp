// A new layer type added in one file, this one, as docs/extending.md says: a gated-gelu MLP
// (GeGLU, gelu(gate) * up; not in the library) that hides the all-reduce of one micro-batch
// behind the next one's compute, registered by name. With nothing else changed it is listed,
// built by name (as torch_domino.overlap builds its class), and over ranks forked and joined by
// the domino backend, at tensor-parallel sizes 1, 2 and 4 and every split, its output, input
// gradient and every parameter gradient equal a plain single-process reference on the unsharded
// weights.
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/generated/variable_factories.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "overlap/ColumnParallelLinear.h"
#include "overlap/DeferredReduction.h"
#include "overlap/HiddenStates.h"
#include "overlap/LayerTypes.h"
#include "overlap/RowParallelLinear.h"
#include "support/ForkRanks.h"
#include "support/LayerStep.h"

namespace domino::overlap {
namespace {

// The new layer type: fc1 holds the gate rows and the up rows, each cut over the ranks (as
// SwiGLU's are), fc2 is row-parallel. Under a row or 2d split each micro-batch's fc2 reduction
// is issued at once and waited for after the later micro-batches computed; under a column or 2d
// split fc2 reduces in column chunks, each while the next chunk's GEMM runs.
class GatedGeluMlpImpl : public ConfiguredLayerImpl {
 public:
  GatedGeluMlpImpl(const TransformerConfig& config, TensorParallelGroupPtr group)
      : ConfiguredLayerImpl(std::move(group)), config_(config) {
    config_.validate(group_->size());
    if (config_.sequence_parallel) {
      throw std::invalid_argument("GatedGeluMLP: sequence_parallel is not supported");
    }
    WeightInit init(config_.seed, config_.init_std, parse_params_dtype(config_.params_dtype));
    const int64_t ffn = config_.ffn_size();
    fc1 = register_module(
        "fc1",
        ColumnParallelLinear(config_.hidden_size, std::vector<int64_t>{ffn, ffn}, config_.bias,
                             group_, init, std::vector<std::string>{"gate", "up"}));
    fc2 = register_module("fc2",
                          RowParallelLinear(ffn, config_.hidden_size, config_.bias, group_, init));
  }

  at::Tensor forward(const at::Tensor& hidden) override {
    check_hidden(hidden, config_, *group_, "GatedGeluMLP");
    DeferredWaitScope pass;
    const auto micro_batches = at::tensor_split(hidden, config_.batch_slices(), 1);
    const bool defer = micro_batches.size() > 1;
    std::vector<PendingSum> sums;
    for (const auto& micro_batch : micro_batches) {
      const auto up = fc1->forward(micro_batch, defer);
      const int64_t half = up.size(-1) / 2;
      const auto gated = at::gelu(up.narrow(-1, 0, half)) * up.narrow(-1, half, half);
      sums.push_back(fc2->issue(gated, config_.column_slices(), !defer));
    }
    std::vector<at::Tensor> outputs;
    for (auto& sum : sums) outputs.push_back(sum.resolve());
    return outputs.size() == 1 ? outputs[0] : at::cat(outputs, 1);
  }

  ColumnParallelLinear fc1{nullptr};
  RowParallelLinear fc2{nullptr};

 private:
  TransformerConfig config_;
};

const bool gated_gelu_registered = register_layer_type<GatedGeluMlpImpl>(
    "GatedGeluMLP", "gelu(gate) * up between a column- and a row-parallel linear (test only)");

using State = std::map<std::string, at::Tensor>;

TransformerConfig config_for(Split split, int64_t micro_batches, int64_t column_chunks, bool bias) {
  TransformerConfig c;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.ffn_hidden_size = 48;
  c.split = split;
  c.micro_batches = micro_batches;
  c.column_chunks = column_chunks;
  c.bias = bias;
  return c;
}

// Every split, biases on and off.
std::vector<TransformerConfig> cases() {
  return {config_for(Split::kNone, 1, 1, true), config_for(Split::kRow, 2, 1, false),
          config_for(Split::kRow, 3, 1, true),  config_for(Split::kColumn, 1, 2, true),
          config_for(Split::k2d, 2, 2, false),  config_for(Split::k2d, 2, 4, true)};
}

State random_state(const TransformerConfig& c) {
  const int64_t h = c.hidden_size;
  const int64_t f = c.ffn_size();
  at::manual_seed(7);
  State state{{"fc1.weight", at::randn({2 * f, h}) * 0.2}, {"fc2.weight", at::randn({h, f}) * 0.2}};
  if (c.bias) {
    state["fc1.bias"] = at::randn({2 * f}) * 0.2;
    state["fc2.bias"] = at::randn({h}) * 0.2;
  }
  return state;
}

// The layer written from the math, on the unsharded weights.
at::Tensor reference(const State& s, const at::Tensor& x) {
  auto bias = [&](const char* name) {
    auto found = s.find(name);
    return found == s.end() ? at::Tensor() : found->second;
  };
  const auto up = at::linear(x, s.at("fc1.weight"), bias("fc1.bias"));
  const int64_t f = up.size(-1) / 2;
  return at::linear(at::gelu(up.narrow(-1, 0, f)) * up.narrow(-1, f, f), s.at("fc2.weight"),
                    bias("fc2.bias"));
}

// "" when output, input gradient and every parameter gradient match, else what does not.
std::string check_case(const TensorParallelGroupPtr& group, const TransformerConfig& config) {
  const State state = random_state(config);
  at::manual_seed(3);
  const auto x = at::randn({6, 5, config.hidden_size});
  const auto probe = at::randn({6, 5, config.hidden_size});
  State leaves;
  for (const auto& [name, tensor] : state) leaves[name] = tensor.clone().set_requires_grad(true);
  auto xr = x.clone().set_requires_grad(true);
  const auto expected = reference(leaves, xr);
  (expected * probe).sum().backward();

  auto layer = build_layer("GatedGeluMLP", config, group);
  load_unsharded(*layer, state);
  auto xs = x.clone().set_requires_grad(true);
  const auto out = layer->forward(xs);
  (out * probe).sum().backward();

  return testing::compare_step(*layer, out, expected, xs.grad(), xr.grad(), leaves, 1e-5);
}

std::string run_rank(int rank, int world, const std::string& store_path) {
  at::set_num_threads(1);
  auto backend = testing::domino_rank(rank, world, store_path, "added-layer-test");
  auto group = TensorParallelGroup::over_backend(backend);
  std::string said;
  for (const auto& config : cases()) {
    const auto off = check_case(group, config);
    if (!off.empty()) {
      said += std::string(enum_name(config.split)) +
              " mb=" + std::to_string(config.micro_batch_count()) +
              " cc=" + std::to_string(config.column_chunks) + ": " + off + "\n";
    }
  }
  backend->barrier()->wait();
  return said;
}

void expect_ranks_match(int world) {
  const std::string store =
      (std::filesystem::temp_directory_path() /
       ("domino-added-layer-" + std::to_string(getpid()) + "-" + std::to_string(world)))
          .string();
  auto outcomes = testing::fork_ranks(
      world, [&](int rank) { return run_rank(rank, world, store); }, std::chrono::seconds(120));
  unlink(store.c_str());
  testing::expect_every_rank_silent(outcomes, world);
}

TEST(AddedLayer, IsListedAfterTheBuiltInTypesAndBuiltByName) {
  ASSERT_TRUE(gated_gelu_registered);
  std::vector<std::string> names;
  for (const auto& type : layer_types()) names.push_back(type.name);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names.back(), "GatedGeluMLP");  // the library's own registered when it loaded
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end() - 1),
            (std::set<std::string>{"ParallelMLP", "ShardedAttention"}));
  auto layer = build_layer("GatedGeluMLP", config_for(Split::kRow, 2, 1, true),
                           c10::make_intrusive<TensorParallelGroup>());
  ASSERT_NE(dynamic_cast<GatedGeluMlpImpl*>(layer.get()), nullptr);
  // What checkpoints and load_unsharded read: fc1's gate and up rows are cut over the ranks.
  std::map<std::string, ShardLayout> layouts;
  for (auto& [name, layout] : parameter_layouts(*layer)) layouts[name] = layout;
  EXPECT_EQ(layouts.at("fc1.weight").dim, 0);
  EXPECT_EQ(layouts.at("fc1.weight").segment_names, (std::vector<std::string>{"gate", "up"}));
  EXPECT_EQ(layouts.at("fc2.weight").dim, 1);
  EXPECT_LT(layouts.at("fc2.bias").dim, 0);
}

TEST(AddedLayer, AnUnknownOrTakenNameIsRefusedWithTheNamesThatExist) {
  try {
    build_layer("GatedGeluMlp", config_for(Split::kRow, 2, 1, true),
                c10::make_intrusive<TensorParallelGroup>());
    FAIL() << "built a layer type nobody registered";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find("no layer type 'GatedGeluMlp'; the registered ones are "), 0u)
        << message;
    for (const char* name : {"ShardedAttention", "ParallelMLP", "GatedGeluMLP"}) {
      EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
  EXPECT_THROW(register_layer_type<GatedGeluMlpImpl>("ParallelMLP", "a second ParallelMLP"),
               std::logic_error);
}

TEST(AddedLayer, MatchesTheReferenceAtTensorParallel1) {
  expect_ranks_match(1);
}
TEST(AddedLayer, MatchesTheReferenceAtTensorParallel2) {
  expect_ranks_match(2);
}
TEST(AddedLayer, MatchesTheReferenceAtTensorParallel4) {
  expect_ranks_match(4);
}

}  // namespace
}  // namespace domino::overlap
