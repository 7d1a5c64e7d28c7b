"""Ranks that keep computing exact collectives while something else hits their ports
(test_garbage.py): each reports the TCP ports it listens on, then runs a fixed sequence of
all-reduces, broadcasts and all-gathers whose every result it checks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from ranks import listening_tcp_ports


def _agreed(flag: Path) -> bool:
    """Whether any rank sees flag: every rank gets the same answer at the same call."""
    seen = torch.tensor([int(flag.exists())])
    dist.all_reduce(seen, op=dist.ReduceOp.MAX)
    return bool(seen.item())


def _round(rank: int, world: int, i: int) -> list[str]:
    wrong = []
    for n in (1, 1000, 70000):
        x = torch.arange(n, dtype=torch.float32) + rank + i
        dist.all_reduce(x)
        want = world * (torch.arange(n, dtype=torch.float32) + i) + world * (world - 1) / 2
        if not torch.equal(x, want):
            wrong.append(f"all_reduce round {i} n {n}")
        y = torch.full((n,), float(rank + i)) if rank == i % world else torch.zeros(n)
        dist.broadcast(y, src=i % world)
        if not torch.equal(y, torch.full((n,), float(i % world + i))):
            wrong.append(f"broadcast round {i} n {n}")
        out = torch.empty(n * world, dtype=torch.int64)
        dist.all_gather_into_tensor(out, torch.full((n,), rank * 1000 + i, dtype=torch.int64))
        want_g = torch.cat([torch.full((n,), r * 1000 + i, dtype=torch.int64)
                            for r in range(world)])
        if not torch.equal(out, want_g):
            wrong.append(f"all_gather round {i} n {n}")
    return wrong


def exact_under_garbage(rank: int, world: int, port_dir: str, max_rounds: int) -> dict:
    """Reports its ports, waits until the attack is under way, then runs checked rounds until
    the attacker has had its fill (or max_rounds)."""
    warm = torch.ones(4)
    dist.all_reduce(warm)  # every communicator up, every listener open
    ports = listening_tcp_ports()
    partial = Path(port_dir, f".{rank}.json")
    partial.write_text(json.dumps(ports))
    os.replace(partial, Path(port_dir, f"{rank}.json"))  # the attacker never reads half a file
    for _ in range(1200):
        if _agreed(Path(port_dir, "attacking")):
            break
        time.sleep(0.05)
    wrong: list[str] = []
    rounds = 0
    while rounds < max_rounds and not _agreed(Path(port_dir, "enough")):
        wrong += _round(rank, world, rounds)
        rounds += 1
    return {"ports": ports, "wrong": wrong[:10], "rounds": rounds}
