// A Domino transformer layer from LibTorch alone: tensor-parallel over every rank, batch cut in
// two micro-batches and outputs in two column chunks, trained a few steps to copy its input.
//
//   torchrun --nproc-per-node 2 --no-python ./domino_layer
#include <ATen/ATen.h>
#include <overlap/TransformerLayer.h>

#include <iostream>

#include "Rendezvous.h"

int main() {
  auto backend = example::join_domino_group("layer-example");
  auto group = domino::overlap::TensorParallelGroup::over_backend(backend);

  domino::overlap::TransformerConfig config;
  config.hidden_size = 64;
  config.num_attention_heads = 8;
  config.num_query_groups = 4;
  config.activation = domino::overlap::Activation::kSwiglu;
  config.normalization = domino::overlap::Normalization::kRmsNorm;
  config.rotary = true;
  config.split = domino::overlap::Split::k2d;
  config.micro_batches = 2;
  config.column_chunks = 2;
  domino::overlap::TransformerLayer layer(config, group);  // each rank holds its shard

  at::manual_seed(0);  // every tensor-parallel rank sees the same batch
  const auto input = at::randn({16, 4, config.hidden_size});
  const double learning_rate = 0.05;
  double first = 0, last = 0;
  for (int step = 1; step <= 5; ++step) {
    auto loss = (layer->forward(input) - input).pow(2).mean();
    loss.backward();
    {
      at::NoGradGuard no_grad;
      for (auto& parameter : layer->parameters()) {
        parameter.sub_(parameter.grad() * learning_rate);
        parameter.mutable_grad().zero_();
      }
    }
    last = loss.item<double>();
    if (step == 1) first = last;
    std::cout << "rank " << group->rank() << " of " << group->size() << ": step " << step
              << " loss " << last << std::endl;
  }
  backend->barrier()->wait();
  return last < first ? 0 : 1;
}
