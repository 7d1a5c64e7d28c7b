"""Rank-side bodies of the Flight Recorder tests: ops recorded with TORCH_FR_BUFFER_SIZE set,
hangs that dump every rank's buffer, and what each rank saw."""

from __future__ import annotations

import gc
import os
import pickle
import time

import torch
import torch.distributed as dist

import torch_domino


def _expect_failure(call) -> str:
    try:
        call()
    except RuntimeError as error:
        return str(error)
    return ""


def _await_file(path: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    return False


def skip_one(rank: int, world: int, prefix: str, skipper: int) -> dict:
    """Every rank all-reduces once; then every rank but `skipper` all-reduces again and times
    out. The skipper issues nothing: it dumps because the others ask it to."""
    x = torch.ones(4)
    dist.all_reduce(x)
    if rank == skipper:
        dumped = _await_file(f"{prefix}{rank}")
        return {"dumped": dumped}
    error = _expect_failure(lambda: dist.all_reduce(torch.ones(4)))
    return {"error": error, "dumped": _await_file(f"{prefix}{rank}")}


def mismatch(rank: int, world: int, prefix: str) -> dict:
    """Rank 0 broadcasts where the others all-reduce, after one all-reduce they agree on."""
    dist.all_reduce(torch.ones(4))
    if rank == 0:
        error = _expect_failure(lambda: dist.broadcast(torch.ones(4), src=0))
    else:
        error = _expect_failure(lambda: dist.all_reduce(torch.ones(4)))
    return {"error": error, "dumped": _await_file(f"{prefix}{rank}")}


def recorded(rank: int, world: int) -> dict:
    """A mix of ops on two groups and every lane; this rank's own buffer, unpickled."""
    other = dist.new_group(list(range(world)), group_desc="tensor_parallel")
    x = torch.ones(8)
    with torch_domino.priority("high"):
        dist.all_reduce(x, group=other)
    with torch_domino.priority("low"):
        dist.all_reduce(x)
    out = torch.empty(8 * world)
    dist.all_gather_into_tensor(out, x)
    gathered = [torch.empty(8) for _ in range(world)]
    dist.all_gather(gathered, x)
    dist.reduce_scatter(torch.empty(8), [torch.ones(8) for _ in range(world)])
    if world > 1:
        if rank == 0:
            dist.send(torch.ones(3, dtype=torch.int64), 1)
        elif rank == 1:
            dist.recv(torch.empty(3, dtype=torch.int64), 0)
    dist.barrier()
    dump = pickle.loads(torch_domino.dump_flight_recorder())
    keep = ("profiling_name", "process_group", "collective_seq_id", "p2p_seq_id", "is_p2p",
            "input_sizes", "output_sizes", "input_dtypes", "state", "retired")
    entries = [{k: e[k] for k in keep} | {"has_duration": "duration_ms" in e}
               for e in dump["entries"]]
    return {"version": dump["version"], "pg_config": dump["pg_config"],
            "pg_status": dump["pg_status"], "entries": entries,
            "enabled": torch_domino._C._flight_recorder_enabled()}


def reinit_on_the_same_port(rank: int, world: int, port: int) -> dict:
    """With recording on (so the dump handshake watches the store), two jobs one after the other
    in one process over a TCPStore that rank 0 hosts on the same port: the first job's store
    must be gone with its group, or the second would find its keys (or its port taken)."""
    sums = []
    for _ in range(2):
        dist.init_process_group("domino", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
        x = torch.full((4,), float(rank + 1))
        dist.all_reduce(x)
        sums.append(x.tolist())
        dist.barrier()  # rank 0's server outlives no one's use of it
        dist.destroy_process_group()
    gc.collect()
    return {"sums": sums, "port_free": rank != 0 or _port_is_free(port)}


def _port_is_free(port: int) -> bool:
    import socket
    with socket.socket() as s:
        # Connections the first job closed linger in TIME_WAIT; only a listener refuses this.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
