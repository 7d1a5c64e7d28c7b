"""Functions that run inside each rank process (see ranks.py). Each returns JSON-able data."""

from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist


def all_reduce_sum(rank: int, world: int) -> dict:
    expected_scale = world * (world + 1) / 2
    small = torch.full((7,), float(rank + 1))
    dist.all_reduce(small)
    big = torch.arange(3_000_000, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(big, op=dist.ReduceOp.SUM)
    want_big = torch.arange(3_000_000, dtype=torch.float32) * expected_scale
    return {
        "small": small.tolist(),
        "big_ok": bool(torch.equal(big, want_big)),
        "expected": expected_scale,
    }


def async_handle(rank: int, world: int) -> dict:
    tensor = torch.full((1 << 20,), float(rank))
    work = dist.all_reduce(tensor, async_op=True)
    waited = work.wait()
    future_tensor = dist.all_reduce(torch.ones(3), async_op=True).get_future().wait()[0]
    work2 = dist.barrier(async_op=True)
    work2.wait()
    return {
        "waited": waited,
        "completed": work.is_completed(),
        "success": work.is_success(),
        "value": tensor[0].item(),
        "expected": sum(range(world)),
        "future": future_tensor.tolist(),
        "result_len": len(work.result()),
    }


def future_value_shape(rank: int, world: int) -> dict:
    """What get_future() yields, to compare domino with gloo in the same test."""
    fut = dist.all_reduce(torch.ones(2) * rank, async_op=True).get_future()
    value = fut.wait()
    chained = fut.then(lambda f: f.value()[0] * 2).wait()
    return {
        "type": type(value).__name__,
        "len": len(value),
        "value": value[0].tolist(),
        "chained": chained.tolist(),
    }


def device_map_backends(rank: int, world: int, spec: str, init_method: str) -> dict:
    dist.init_process_group(spec, init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    group = dist.distributed_c10d._get_default_group()
    names = {}
    for device in ("cpu", "cuda"):
        backend = group._get_backend(torch.device(device))
        names[device] = type(backend).__name__
    t = torch.full((4,), float(rank + 1))
    dist.all_reduce(t)
    dist.destroy_process_group()
    return {"backends": names, "value": t[0].item()}


def init_expecting_error(rank: int, world: int, init_method: str) -> dict:
    try:
        dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=20))
    except Exception as error:  # noqa: BLE001 - the test inspects the type and text
        return {"raised": type(error).__name__, "message": str(error)}
    dist.destroy_process_group()
    return {"raised": None, "message": ""}


def mismatched_sizes(rank: int, world: int) -> dict:
    tensor = torch.ones(10 if rank == 1 else 12)
    work = dist.all_reduce(tensor, async_op=True)
    outcome = {}
    try:
        work.wait()
        outcome["raised"] = None
    except Exception as error:  # noqa: BLE001
        outcome["raised"] = type(error).__name__
        outcome["is_runtime_error"] = isinstance(error, RuntimeError)
        outcome["message"] = str(error)
    outcome["completed"] = work.is_completed()
    outcome["success"] = work.is_success()
    try:
        work.get_future().wait()
        outcome["future_raised"] = False
    except Exception:  # noqa: BLE001
        outcome["future_raised"] = True
    after = torch.ones(5)
    dist.all_reduce(after)
    outcome["after"] = after.tolist()
    return outcome


def shm_listing(rank: int, world: int) -> list:
    dist.all_reduce(torch.ones(1 << 18))
    return sorted(os.listdir("/dev/shm"))


def surface(rank: int, world: int) -> list:
    from surface import run_surface

    return run_surface(rank, world)
