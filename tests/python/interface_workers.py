"""Rank bodies for test_socket_interfaces: init's outcome, and an exact job that reports which
network interfaces UCX listens on."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import time

import torch
import torch.distributed as dist

from ranks import listening_tcp_ports


def init_outcome(rank: int, world: int, init_method: str) -> dict:
    """Whether init_process_group succeeds, and what it raised if not."""
    start = time.monotonic()
    try:
        dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=20))
    except Exception as e:  # noqa: BLE001 (the test checks the type)
        return {"error": type(e).__name__, "message": str(e), "seconds": time.monotonic() - start}
    dist.destroy_process_group()
    return {"error": None, "seconds": time.monotonic() - start}


def later_group_with_other_interfaces(rank: int, world: int, init_method: str) -> dict:
    """A first group with the default interfaces, then a second one after DOMINO_SOCKET_IFNAME
    changed: UCX cannot take the second choice, and its init says so."""
    dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=20))
    t = torch.ones(3)
    dist.all_reduce(t)
    os.environ["DOMINO_SOCKET_IFNAME"] = "lo"
    try:
        dist.new_group(list(range(world)), backend="domino")
        outcome = {"error": None}
    except Exception as e:  # noqa: BLE001 (the test checks the type)
        outcome = {"error": type(e).__name__, "message": str(e)}
    del os.environ["DOMINO_SOCKET_IFNAME"]
    dist.destroy_process_group()
    return {**outcome, "sum": t.tolist()}


def _interface_addresses() -> dict[str, str]:
    """Each address of this network namespace's interfaces -> the interface's name."""
    out = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True,
                                    check=True).stdout)
    return {a["local"]: i["ifname"] for i in out for a in i.get("addr_info", [])}


def exact_job(rank: int, world: int, init_method: str) -> dict:
    """All-reduces, a broadcast and an all-gather across the hosts, checked exactly, then the
    interfaces UCX listens on and what the topology report says it was given."""
    import torch_domino

    dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    failures = []
    total = sum(range(1, world + 1))
    for n in (1, 37, 70000):
        t = torch.arange(n, dtype=torch.float64) * (rank + 1)
        dist.all_reduce(t)
        if not torch.equal(t, torch.arange(n, dtype=torch.float64) * total):
            failures.append(f"all_reduce of {n}")
    b = torch.full((1000,), float(rank))
    dist.broadcast(b, src=world - 1)
    if not torch.equal(b, torch.full((1000,), float(world - 1))):
        failures.append("broadcast")
    parts = [torch.empty(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(parts, torch.full((3,), rank, dtype=torch.int64))
    if [p.tolist() for p in parts] != [[r] * 3 for r in range(world)]:
        failures.append("all_gather")
    binding = torch_domino.topology(sizes=[8])["binding"]
    owners = _interface_addresses()
    listening = sorted({owners[a] for a in {address for address, _ in listening_tcp_ports()} if a in owners})
    dist.destroy_process_group()
    return {"failures": failures, "listening": listening,
            "ucx_net_devices": binding["ucx_net_devices"],
            "rule": binding["ucx_net_devices_rule"]}
