"""DDP over domino that survives losing a rank: 4 ranks train a small model; rank 3 is
SIGKILLed at step 10; the survivors catch the error, shrink the group (dist.shrink_group),
re-split the data over 3 ranks, redo the step and go on to step 30. The example then trains a
fresh 3-rank group from the state the survivors had at step 10 and checks that both give the
same losses: the global batch is the same, only cut three ways instead of four.

    python examples/python/elastic_ddp.py              # 4 ranks, kill rank 3 at step 10, 30 steps

It starts its own ranks (one process each, a FileStore that outlives any of them).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

GLOBAL_BATCH = 24  # divisible by 4 and by 3 ranks


def batch(step: int, rank: int, world: int):
    import torch

    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, 32, generator=g)
    y = x[:, :4].sum(dim=1, keepdim=True) + 0.1 * torch.randn(GLOBAL_BATCH, 1, generator=g)
    share = GLOBAL_BATCH // world
    return x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]


def global_loss(model, step: int):
    """The loss over the whole global batch, the same number on every rank whatever the world."""
    import torch

    with torch.no_grad():
        x, y = batch(step, 0, 1)
        return torch.nn.functional.mse_loss(model(x), y).item()


def train(args) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import SHRINK_ABORT
    from torch.nn.parallel import DistributedDataParallel as DDP

    import torch_domino  # noqa: F401  registers "domino"

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"file://{args.store}", rank=args.rank,
                            world_size=args.world)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    start = 0
    if args.resume:
        state = torch.load(args.resume)
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    model = DDP(net)
    losses = {}
    step = start
    while step < args.steps:
        if step == args.kill_step and args.save and dist.get_rank() == 0:
            torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": step}, args.save)
        if step == args.kill_step and args.rank == args.kill_rank:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, as an OOM kill or a crash
        x, y = batch(step, dist.get_rank(), dist.get_world_size())
        optimizer.zero_grad()
        try:
            torch.nn.functional.mse_loss(model(x), y).backward()
        except RuntimeError as e:
            # The gradients' all-reduce names the dead rank; this step's update never happened.
            print(f"rank {args.rank}: step {step} failed: {str(e).splitlines()[0][:160]}",
                  flush=True)
            dist.shrink_group([args.kill_rank], shrink_flags=SHRINK_ABORT)
            model = DDP(net)  # over the shrunk default group, data re-split by the new world
            continue
        optimizer.step()
        losses[step] = global_loss(net, step)
        step += 1
    Path(args.out, f"losses.{args.rank}.json").write_text(json.dumps(losses))
    dist.destroy_process_group()


def launch(world: int, out: str, **flags) -> list[int]:
    with tempfile.TemporaryDirectory(prefix="domino-elastic-") as store_dir:
        procs = []
        for rank in range(world):
            cmd = [sys.executable, __file__, "--rank", str(rank), "--world", str(world),
                   "--store", f"{store_dir}/store", "--out", out]
            for name, value in flags.items():
                cmd += [f"--{name.replace('_', '-')}", str(value)]
            procs.append(subprocess.Popen(cmd, env=dict(os.environ, OMP_NUM_THREADS="1")))
        return [p.wait(timeout=600) for p in procs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", type=int, default=-1)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--store", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--kill-rank", type=int, default=3)
    parser.add_argument("--kill-step", type=int, default=10)
    parser.add_argument("--save", default="")
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    if args.rank >= 0:
        return train(args)

    with tempfile.TemporaryDirectory(prefix="domino-elastic-out-") as out:
        state = f"{out}/state-at-step-{args.kill_step}.pt"
        codes = launch(args.world, out, steps=args.steps, kill_rank=args.kill_rank,
                       kill_step=args.kill_step, save=state)
        assert codes[args.kill_rank] == -signal.SIGKILL, codes
        assert all(c == 0 for r, c in enumerate(codes) if r != args.kill_rank), codes
        elastic = json.loads(Path(out, "losses.0.json").read_text())
        fresh_dir = f"{out}/fresh"
        os.makedirs(fresh_dir)
        codes = launch(args.world - 1, fresh_dir, steps=args.steps, kill_rank=-1,
                       kill_step=-1, resume=state)
        assert all(c == 0 for c in codes), codes
        fresh = json.loads(Path(fresh_dir, "losses.0.json").read_text())
    after = [str(s) for s in range(args.kill_step, args.steps)]
    worst = max(abs(elastic[s] - fresh[s]) / max(abs(fresh[s]), 1e-12) for s in after)
    print("step  loss (4 ranks, then 3 after the kill)  loss (fresh 3-rank run from step "
          f"{args.kill_step})")
    for s in sorted(elastic, key=int):
        print(f"{int(s):4d}  {elastic[s]:.6f}" + (f"  {fresh[s]:.6f}" if s in fresh else ""))
    assert worst < 1e-5, f"losses after the shrink differ from the fresh run by {worst:.2e}"
    print(f"OK: after the shrink, losses equal a fresh {args.world - 1}-rank run from step "
          f"{args.kill_step} within {worst:.1e} (relative)")


if __name__ == "__main__":
    main()
