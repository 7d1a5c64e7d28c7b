"""All-reduce with the domino backend: sync, async with overlap, and a future chain.

    torchrun --nproc-per-node 2 examples/python/all_reduce.py
"""

import torch
import torch.distributed as dist

import torch_domino  # noqa: F401  registers the "domino" backend


def main() -> None:
    dist.init_process_group("domino")
    rank, world = dist.get_rank(), dist.get_world_size()

    grads = torch.full((1 << 20,), float(rank + 1))
    dist.all_reduce(grads)  # blocking, SUM
    expected = world * (world + 1) / 2
    assert torch.all(grads == expected), grads[:4]

    # async_op=True returns at once; the transfer runs on the group's progress lane.
    bucket = torch.ones(4 << 20)
    work = dist.all_reduce(bucket, op=dist.ReduceOp.AVG, async_op=True)
    busy = torch.randn(256, 256) @ torch.randn(256, 256)  # compute overlaps the transfer
    work.wait()
    assert torch.all(bucket == 1.0)

    doubled = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(
        lambda fut: fut.value()[0] * 2
    ).wait()
    print(f"rank {rank}/{world}: sum={grads[0].item():g} avg={bucket[0].item():g} "
          f"future={doubled.tolist()} (overlapped a {tuple(busy.shape)} matmul)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
