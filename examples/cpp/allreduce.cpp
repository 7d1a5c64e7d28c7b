// A 2-process all-reduce from LibTorch alone, with the domino backend.
//
//   torchrun --nproc-per-node 2 --no-python ./allreduce
// or by hand: RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 ./allreduce (and RANK=1).
#include <iostream>

#include "Rendezvous.h"

int main() {
  auto group = example::join_domino_group("example");
  const int rank = group->getRank();
  const int world = group->getSize();

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
