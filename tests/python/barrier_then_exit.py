"""Barrier, then exit: the way jobs end. Runs ``rounds`` jobs of ``world`` ranks, one after the
other, each on a TCPStore that rank 0 hosts; every rank calls ``dist.monitored_barrier`` and rank 0
leaves with ``os._exit(0)`` the moment it returns, taking its store with it. A rank that passed
the barrier must not fail. Two CPU burners run beside the ranks.

The ranks are forked from this process after ``import torch_domino``, so a round costs a fork and
a group set-up rather than a Python start. Prints one JSON line: every failed rank's message.

    python tests/python/barrier_then_exit.py WORLD ROUNDS [BACKEND]
"""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import sys
import time

import torch
import torch.distributed as dist

import torch_domino  # noqa: F401  registers "domino"


def burn(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10000))


def rank_process(rank: int, world: int, backend: str, port_read: int, port_write: int) -> None:
    """The child's whole life; its exit code says whether it passed (0) or failed (1)."""
    try:
        timeout = datetime.timedelta(seconds=30)
        if rank == 0:
            store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, timeout=timeout,
                                  wait_for_workers=False)
            for _ in range(world - 1):
                os.write(port_write, store.port.to_bytes(4, "little"))
        else:
            port = int.from_bytes(os.read(port_read, 4), "little")
            store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                                timeout=timeout)
        group = dist.group.WORLD
        if hasattr(dist, "monitored_barrier") and (backend == "gloo" or tuple(
                int(x) for x in torch.__version__.split(".")[:2]) >= (2, 14)):
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
        else:  # before torch 2.14, dist.monitored_barrier refuses every backend but Gloo
            group.monitored_barrier(datetime.timedelta(seconds=10))
        os._exit(0)  # at once: rank 0's store goes with it
    except BaseException as error:  # noqa: BLE001  the message is the result
        sys.stderr.write(f"rank {rank}: {type(error).__name__}: {error}\n")
        sys.stderr.flush()
        os._exit(1)


def one_round(world: int, backend: str) -> list[str]:
    read, write = os.pipe()
    errors = []
    children = {}
    err_read, err_write = os.pipe()
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            os.close(read if rank == 0 else write)
            os.dup2(err_write, 2)
            rank_process(rank, world, backend, read, write)
        children[pid] = rank
    os.close(read)
    os.close(write)
    os.close(err_write)
    deadline = time.monotonic() + 120
    codes = {}
    while children and time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.01)
            continue
        codes[children.pop(pid)] = os.waitstatus_to_exitcode(status)
    for pid, rank in children.items():
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        errors.append(f"rank {rank}: did not finish within 120 s")
    with os.fdopen(err_read) as stream:
        said = stream.read()
    for rank, code in sorted(codes.items()):
        if code != 0:
            lines = [line for line in said.splitlines() if line.startswith(f"rank {rank}:")]
            errors.append(lines[-1] if lines else f"rank {rank}: exit code {code}")
    return errors


def main() -> None:
    world, rounds = int(sys.argv[1]), int(sys.argv[2])
    backend = sys.argv[3] if len(sys.argv) > 3 else "domino"
    stop = multiprocessing.get_context("fork").Event()
    burners = [multiprocessing.get_context("fork").Process(target=burn, args=(stop,))
               for _ in range(2)]
    for burner in burners:
        burner.start()
    failures = []
    try:
        for index in range(rounds):
            failures += [f"round {index}: {e}" for e in one_round(world, backend)]
    finally:
        stop.set()
        for burner in burners:
            burner.join()
    print(json.dumps({"rounds": rounds, "world": world, "failures": failures}), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
