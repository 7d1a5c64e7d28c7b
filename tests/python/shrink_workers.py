"""Rank functions for the shrink and abort tests (see test_shrink.py and ranks.py)."""

from __future__ import annotations

import gc
import os
import time

import torch
import torch.distributed as dist

import torch_domino


def every_op(group=None) -> list[str]:
    """Each collective and a send/recv ring on group, checked exactly; the failures' names."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    to_global = (lambda r: dist.get_global_rank(group, r)) if group is not None else (lambda r: r)
    failures = []
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t, group=group)
    if t[0].item() != world * (world + 1) / 2:
        failures.append("all_reduce")
    b = torch.full((7,), float(rank))
    dist.broadcast(b, src=to_global(world - 1), group=group)
    if b.tolist() != [float(world - 1)] * 7:
        failures.append("broadcast")
    gathered = torch.empty(world * 3)
    dist.all_gather_into_tensor(gathered, torch.full((3,), float(rank)), group=group)
    if gathered.tolist() != [float(r) for r in range(world) for _ in range(3)]:
        failures.append("all_gather_into_tensor")
    scattered = torch.empty(2)
    dist.reduce_scatter_tensor(scattered, torch.arange(world * 2, dtype=torch.float32), group=group)
    if scattered.tolist() != [float(world * (2 * rank)), float(world * (2 * rank + 1))]:
        failures.append("reduce_scatter_tensor")
    out = torch.empty(world)
    dist.all_to_all_single(out, torch.full((world,), float(rank)), group=group)
    if out.tolist() != [float(r) for r in range(world)]:
        failures.append("all_to_all_single")
    if world > 1:
        incoming = torch.empty(4)
        ops = [dist.P2POp(dist.isend, torch.full((4,), float(rank)), to_global((rank + 1) % world), group),
               dist.P2POp(dist.irecv, incoming, to_global((rank - 1) % world), group)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        if incoming.tolist() != [float((rank - 1) % world)] * 4:
            failures.append("send/recv")
    for level in ("high", "low"):
        with torch_domino.priority(level):
            lane = torch.ones(64)
            dist.all_reduce(lane, group=group)
        if lane[0].item() != world:
            failures.append(f"all_reduce on the {level} lane")
    dist.barrier(group=group)
    return failures


def healthy(rank: int, world: int) -> dict:
    """The last rank leaves; the others shrink the default group without it."""
    if rank == world - 1:
        return {"left": True}
    shrunk = dist.shrink_group([world - 1])
    return {"rank": dist.get_rank(), "world": dist.get_world_size(),
            "is_default": shrunk == dist.group.WORLD, "failures": every_op()}


def excluded_calls_old_group(rank: int, world: int) -> dict:
    """The last rank is left out but keeps calling the old group: it is told, not left waiting."""
    if rank == world - 1:
        began = time.monotonic()
        try:
            for _ in range(1000):
                dist.all_reduce(torch.ones(10))
        except RuntimeError as e:
            return {"error": str(e), "seconds": time.monotonic() - began}
        return {"error": ""}
    dist.shrink_group([world - 1])
    return {"failures": every_op()}


def after_kill(rank: int, world: int, victims: list) -> dict:
    """Every rank streams all-reduces; after 20 of them the victims SIGKILL themselves. The
    survivors catch the error, shrink with SHRINK_ABORT and go on: times from the error to the
    first all-reduce on the shrunk group."""
    import signal

    from torch.distributed.distributed_c10d import SHRINK_ABORT

    big = torch.ones(1 << 20)
    error = ""
    try:
        for step in range(100000):
            if rank in victims and step == 20:
                os.kill(os.getpid(), signal.SIGKILL)
            started = time.monotonic()
            dist.all_reduce(big)
    except RuntimeError as e:
        error = str(e)
    # The call that failed began at most one all-reduce before the death: far below the group
    # timeout means the death was noticed, not waited out.
    failed_after = time.monotonic() - started
    if rank in victims:  # saw another victim die first: dies as planned
        os.kill(os.getpid(), signal.SIGKILL)
    caught = time.monotonic()
    dist.shrink_group(sorted(victims), shrink_flags=SHRINK_ABORT)
    first = torch.full((16,), float(rank))
    dist.all_reduce(first)
    recovered = time.monotonic() - caught
    survivors = [r for r in range(world) if r not in victims]
    return {"error": error, "failed_after_s": failed_after, "recovered_s": recovered,
            "sum_ok": first[0].item() == sum(survivors),
            "world": dist.get_world_size(), "failures": every_op()}


def sub_group(rank: int, world: int) -> dict:
    """A sub-group of global ranks 0, 1 and 2 shrinks without its rank 1; the default group of
    all four stays as it was."""
    sub = dist.new_group([0, 1, 2], backend="domino")
    result = {}
    if rank in (0, 2):
        shrunk = dist.shrink_group([1], group=sub)
        result["ranks"] = dist.get_process_group_ranks(shrunk)
        result["failures"] = every_op(shrunk)
    dist.barrier()
    result["default_failures"] = every_op()
    return result


def descriptors() -> tuple[int, int, list]:
    gc.collect()
    fds = sorted(os.listdir("/proc/self/fd"))
    targets = []
    for fd in fds:
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            targets.append("?")
    return len(os.listdir("/proc/self/task")), len(fds), targets


def one_by_one(rank: int, world: int) -> dict:
    """Six ranks; rank 5 leaves, then rank 4: threads and descriptors with every lane of the
    group in use, before and after each shrink."""
    failures = every_op()
    counts = [descriptors()]
    if rank == world - 1:
        return {"left": True}
    dist.shrink_group([world - 1])
    failures += every_op()
    counts.append(descriptors())
    if rank == world - 2:
        return {"left": True}
    dist.shrink_group([world - 2])
    failures += every_op()
    counts.append(descriptors())
    return {"counts": counts, "failures": failures}


def abort_in_flight(rank: int, world: int) -> dict:
    """Rank 0 aborts the default group while every rank waits in an all-reduce that the last rank
    never joins: all end with an error at once, and later collectives name the abort."""
    import threading

    if rank == world - 1:
        time.sleep(15.0)  # never joins: only the abort can end the others' wait in time
        return {"absent": True}
    work = dist.all_reduce(torch.ones(100), async_op=True)
    if rank == 0:
        threading.Timer(1.0, dist.group.WORLD.abort).start()
    began = time.monotonic()
    error = ""
    try:
        work.wait()
    except RuntimeError as e:
        error = str(e)
    ended = time.monotonic() - began
    later = ""
    try:
        dist.all_reduce(torch.ones(3))
    except RuntimeError as e:
        later = str(e)
    return {"error": error, "seconds": ended, "later": later}


def new_groups_after_a_default_shrink(rank: int, world: int) -> dict:
    """Groups made before a default-group shrink and groups made after it, which c10d numbers
    from 1 again over the same store, all run every op."""
    before = dist.new_group(list(range(world)), backend="domino")
    result = {"before_name": dist.distributed_c10d._get_process_group_name(before),
              "before_failures": every_op(before)}
    if rank == world - 1:
        return {"left": True}
    dist.shrink_group([world - 1])
    after = dist.new_group(list(range(world - 1)), backend="domino")
    result["after_name"] = dist.distributed_c10d._get_process_group_name(after)
    result["after_failures"] = every_op(after)
    again = dist.new_group(list(range(world - 1)), backend="domino")
    result["again_failures"] = every_op(again)
    result["default_failures"] = every_op()
    return result
