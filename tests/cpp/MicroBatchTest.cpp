// MicroBatch: a residual plus a row-parallel sum in column chunks gives the same bits and
// gradients whether a consumer takes it whole or part by part, and joins its parts only once.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <torch/csrc/autograd/autograd.h>

#include <vector>

#include "overlap/MicroBatch.h"

namespace domino::overlap {
namespace {

constexpr int64_t kChunks = 2;

struct Inputs {
  at::Tensor residual;
  std::vector<at::Tensor> chunks;
  at::Tensor bias;
  DropMask mask;
};

Inputs make_inputs() {
  const auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
  Inputs in;
  in.residual = at::randn({5, 3, 8}, generator).set_requires_grad(true);
  for (int64_t k = 0; k < kChunks; ++k) {
    in.chunks.push_back(at::randn({5, 3, 8 / kChunks}, generator).set_requires_grad(true));
  }
  in.bias = at::randn({8}, generator);
  in.mask.dropped = at::rand({5, 3, 8}, generator) < 0.3;
  in.mask.scale = 1.0 / 0.7;
  return in;
}

MicroBatch pending(const Inputs& in) {
  auto micro_batch = MicroBatch::ready(in.residual, 0);
  micro_batch.add(PendingSum(in.chunks, {}, in.bias), in.mask);
  return micro_batch;
}

// The value and the gradients of the residual and of each chunk under a fixed probe.
std::vector<at::Tensor> value_and_gradients(const Inputs& in, const at::Tensor& value) {
  const auto probe = at::arange(value.numel(), at::kFloat).view(value.sizes()).sin();
  auto inputs = in.chunks;
  inputs.insert(inputs.begin(), in.residual);
  auto grads = torch::autograd::grad({(value * probe).sum()}, inputs);
  grads.insert(grads.begin(), value.detach());
  return grads;
}

void expect_same_bits(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "tensor " << i;
}

TEST(MicroBatch, WholeResidualMeetsAChunkedSumWhole) {
  const auto in = make_inputs();
  auto micro_batch = pending(in);
  EXPECT_EQ(micro_batch.parts(), kChunks);  // a consumer may still take it part by part
  const auto whole = micro_batch.resolve();
  EXPECT_EQ(micro_batch.parts(), 1);
  const auto expected = in.residual + in.mask.apply(at::cat(in.chunks, -1) + in.bias);
  EXPECT_TRUE(at::equal(whole, expected));
  EXPECT_TRUE(micro_batch.resolve().is_same(whole));
}

TEST(MicroBatch, PartsTakenOneByOneGiveTheWholeBitsAndGradients) {
  const auto in = make_inputs();
  auto by_parts = pending(in);
  std::vector<at::Tensor> parts;
  for (int64_t k = 0; k < kChunks; ++k) parts.push_back(by_parts.part(k));
  const auto joined = by_parts.resolve();
  EXPECT_TRUE(by_parts.resolve().is_same(joined));  // joined once, not copied again
  EXPECT_TRUE(at::equal(at::cat(parts, -1), joined));

  auto whole = pending(in);
  expect_same_bits(value_and_gradients(in, joined), value_and_gradients(in, whole.resolve()));
}

TEST(MicroBatch, SettlingAWholeResidualAddsTheWholeSum) {
  const auto in = make_inputs();
  auto settled = pending(in);
  settled.settle();
  EXPECT_EQ(settled.parts(), 1);
  auto resolved = pending(in);
  EXPECT_TRUE(at::equal(settled.resolve(), resolved.resolve()));
}

}  // namespace
}  // namespace domino::overlap
