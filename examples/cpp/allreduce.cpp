// A 2-process all-reduce from LibTorch alone, with the domino backend.
//
//   torchrun --nproc-per-node 2 --no-python ./allreduce
// or by hand: RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 ./allreduce (and RANK=1).
#include <domino/ProcessGroupDomino.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {
std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}
}  // namespace

int main() {
  const int rank = std::stoi(env_or("RANK", "0"));
  const int world = std::stoi(env_or("WORLD_SIZE", "1"));

  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(std::stoi(env_or("MASTER_PORT", "29500")));
  // Under torchrun the agent already hosts the store; by hand, rank 0 does.
  store_options.isServer = rank == 0 && env_or("TORCHELASTIC_USE_AGENT_STORE", "") != "True";
  store_options.numWorkers = world;
  auto store =
      c10::make_intrusive<c10d::TCPStore>(env_or("MASTER_ADDR", "127.0.0.1"), store_options);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("domino-example", store);

  auto options = domino::ProcessGroupDomino::Options::create(std::chrono::seconds(60));
  options->group_name = "example";
  auto group = c10::make_intrusive<domino::ProcessGroupDomino>(group_store, rank, world, options);

  std::vector<at::Tensor> tensors{at::full({4}, static_cast<double>(rank + 1))};
  auto work = group->allreduce(tensors);  // returns at once; the transfer runs on the lane
  work->wait();

  const double expected = world * (world + 1) / 2.0;
  const bool correct = at::allclose(tensors[0], at::full({4}, expected));
  std::cout << "rank " << rank << " of " << world << ": all_reduce gave "
            << tensors[0][0].item<double>() << " (expected " << expected << ") via "
            << group->intra_transport() << std::endl;

  group->barrier()->wait();
  return correct ? 0 : 1;
}
