"""Rank functions for the CUDA checks (see test_gpu_lanes.py): they run only where torch sees a
GPU. Each returns JSON-able facts; the tests assert on them."""

from __future__ import annotations

import time

import torch
import torch.distributed as dist

import torch_domino


def _cuda_state() -> dict:
    return dist.group.WORLD._get_backend(torch.device("cuda"))._cuda()


def stream_priorities(rank: int, world: int) -> dict:
    """One CUDA all-reduce per lane; the comm streams then report their priorities."""
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    for level in ("high", "normal", "low"):
        x = torch.ones(1024, device=device)
        with torch_domino.priority(level):
            dist.all_reduce(x)
    torch.cuda.synchronize()
    state = _cuda_state()
    least, greatest = torch.cuda.Stream.priority_range()
    return {"state": state, "torch_least": least, "torch_greatest": greatest}


def caller_stream_waits(rank: int, world: int) -> dict:
    """Behind a long kernel on the caller's stream: wait() returns at once and leaves the
    caller's stream (not the host) waiting for the all-reduce."""
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    warm = torch.ones(16, device=device)
    dist.all_reduce(warm)  # communicators and streams exist before anything is timed
    torch.cuda.synchronize()
    x = torch.full((1 << 20,), float(rank + 1), device=device)
    sleep_cycles = int(torch.cuda.get_device_properties(device).clock_rate * 1000 * 1.5)  # ~1.5 s
    torch.cuda._sleep(sleep_cycles)
    started = time.perf_counter()
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    host_wait_s = time.perf_counter() - started
    stream_busy = not torch.cuda.current_stream().query()
    completed_early = work.is_completed()
    y = x * 2  # queued behind the all-reduce on the caller's stream
    torch.cuda.synchronize()
    total_s = time.perf_counter() - started
    return {
        "host_wait_s": host_wait_s,
        "total_s": total_s,
        "stream_busy_after_wait": stream_busy,
        "completed_right_after_wait": completed_early,
        "value": x[0].item(),
        "doubled": y[0].item(),
        "expected": float(sum(range(1, world + 1))),
        "path": _cuda_state()["path"],
    }


def collectives_on_device(rank: int, world: int) -> dict:
    """Every op on CUDA tensors against a reference computed here; reports which path ran."""
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    failures = []

    def check(name, got, want):
        if not torch.equal(got.cpu(), want.cpu()):
            failures.append(f"{name}: got {got.cpu().flatten()[:6].tolist()} want "
                            f"{want.cpu().flatten()[:6].tolist()}")

    ranks = range(world)
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64):
        base = torch.arange(1, 37, dtype=torch.float32).reshape(6, 6).to(dtype)
        x = (base + rank).to(device)
        dist.all_reduce(x)
        check(f"all_reduce sum {dtype}", x, sum((base + r) for r in ranks).to(dtype))
        x = (base + rank).to(device)
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
        check(f"all_reduce max {dtype}", x, (base + world - 1).to(dtype))
    # 16-bit floats of a size the reduction kernels vectorize, with a tail, rounded once per
    # element. Multiples of 1/8 below 64 sum exactly in float32 in any order, so the reference
    # need not follow the transport's order.
    for dtype in (torch.bfloat16, torch.float16):
        g = torch.Generator().manual_seed(5)
        parts = [(torch.randint(-512, 512, (100_003,), generator=g) / 8).to(dtype) for _ in ranks]
        for op, reduce in ((dist.ReduceOp.SUM, lambda ts: sum(t.float() for t in ts)),
                           (dist.ReduceOp.AVG, lambda ts: sum(t.float() for t in ts) / world),
                           (dist.ReduceOp.MAX, lambda ts: torch.stack(ts).float().amax(0))):
            x = parts[rank].to(device)
            dist.all_reduce(x, op=op)
            check(f"all_reduce {op} {dtype} x 100003", x, reduce(parts).to(dtype))
    # Bitwise ops go through host memory (NCCL has none); AVG stays on the device.
    x = torch.tensor([1 << rank, 3], dtype=torch.int64, device=device)
    dist.all_reduce(x, op=dist.ReduceOp.BOR)
    check("all_reduce bor", x, torch.tensor([(1 << world) - 1, 3]))
    x = torch.full((5,), float(rank), device=device)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    check("all_reduce avg", x, torch.full((5,), sum(ranks) / world))
    # Non-contiguous input: a transposed view.
    x = (torch.arange(12.0).reshape(3, 4) * (rank + 1)).to(device).t()
    dist.all_reduce(x)
    check("all_reduce transposed", x, (torch.arange(12.0).reshape(3, 4) * sum(r + 1 for r in ranks)).t())
    x = torch.full((7,), float(rank), device=device)
    dist.broadcast(x, src=world - 1)
    check("broadcast", x, torch.full((7,), float(world - 1)))
    out = torch.empty(world * 3, device=device)
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank), device=device))
    check("all_gather_into_tensor", out, torch.arange(world).float().repeat_interleave(3))
    outs = [torch.empty(2, device=device) for _ in ranks]
    dist.all_gather(outs, torch.full((2,), float(rank), device=device))
    check("all_gather", torch.stack(outs), torch.arange(world).float()[:, None].expand(world, 2))
    inp = torch.arange(world * 4, dtype=torch.float32, device=device) + rank
    out = torch.empty(4, device=device)
    dist.reduce_scatter_tensor(out, inp)
    want = sum(torch.arange(world * 4, dtype=torch.float32) + r for r in ranks)
    check("reduce_scatter_tensor", out, want[rank * 4:(rank + 1) * 4])
    inp = torch.arange(world, dtype=torch.float32, device=device) + 10 * rank
    out = torch.empty(world, device=device)
    dist.all_to_all_single(out, inp)
    check("all_to_all_single", out, torch.tensor([10.0 * r + rank for r in ranks]))
    x = torch.full((3,), float(rank + 1), device=device)
    dist.reduce(x, dst=0)
    if rank == 0:
        check("reduce", x, torch.full((3,), float(sum(r + 1 for r in ranks))))
    x = torch.full((2,), float(rank), device=device)
    gathered = [torch.empty(2, device=device) for _ in ranks] if rank == 0 else None
    dist.gather(x, gathered, dst=0)
    if rank == 0:
        check("gather", torch.stack(gathered), torch.arange(world).float()[:, None].expand(world, 2))
    if world > 1:
        x = torch.full((4,), float(rank), device=device)
        if rank == 0:
            dist.send(x + 100, dst=1)
        elif rank == 1:
            dist.recv(x, src=0)
            check("send/recv", x, torch.full((4,), 100.0))
    # The future is CUDA-aware: then-callbacks and wait see the finished value.
    x = torch.full((3,), float(rank + 1), device=device)
    fut = dist.all_reduce(x, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    check("future then", doubled, torch.full((3,), 2.0 * sum(r + 1 for r in ranks)))
    with torch_domino.handles():
        y = torch.ones(8, device=device)
        dist.all_reduce(y, async_op=True)
    check("handles scope", y, torch.full((8,), float(world)))
    torch.cuda.synchronize()
    return {"failures": failures, "path": _cuda_state()["path"]}


def watchdog_aborts_a_stuck_communicator(rank: int, world: int) -> dict:
    """An all-reduce held behind a kernel that outlasts the group timeout (3 s): the watchdog
    aborts the group's NCCL communicators, later CUDA collectives raise naming it, CPU
    collectives of the group still run, and the process lives on to report. (The held work's
    wait() returns before the abort, leaving the caller's stream waiting.)"""
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    warm = torch.ones(16, device=device)
    dist.all_reduce(warm)
    torch.cuda.synchronize()
    sleep_cycles = int(torch.cuda.get_device_properties(device).clock_rate * 1000 * 6.0)  # ~6 s
    torch.cuda._sleep(sleep_cycles)
    started = time.perf_counter()
    work = dist.all_reduce(torch.ones(1 << 10, device=device), async_op=True)
    errors = {}
    try:
        work.wait()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the message is the fact
        errors["work"] = str(e)
    deadline = time.perf_counter() + 30
    while "later" not in errors and time.perf_counter() < deadline:
        try:
            dist.all_reduce(torch.ones(4, device=device))
            torch.cuda.synchronize()
            time.sleep(0.5)
        except Exception as e:  # noqa: BLE001
            errors["later"] = str(e)
    cpu = torch.ones(3)
    dist.all_reduce(cpu)
    return {"errors": errors, "seconds": time.perf_counter() - started,
            "cpu_after": cpu.tolist(), "path": _cuda_state()["path"]}


def shrink_on_device(rank: int, world: int) -> dict:
    """Each rank on a GPU of its own all-reduces on the device (an NCCL communicator per lane), then
    the group shrinks without its last rank, which is alive and simply leaves: the others go on
    on the device over the communicator NCCL shrank (ncclCommShrink), with no rendezvous."""
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    before = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(before)
    torch.cuda.synchronize()
    if rank == world - 1:
        return {"left": True}
    dist.shrink_group([world - 1])
    after = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(after)
    torch.cuda.synchronize()
    survivors = world - 1
    return {"before": before[0].item(), "after": after[0].item(),
            "expected_before": world * (world + 1) / 2,
            "expected_after": survivors * (survivors + 1) / 2, "state": _cuda_state()}
