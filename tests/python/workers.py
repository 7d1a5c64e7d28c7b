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
        # domino's own Python type below torch's: the ended work's wait() keeps the GIL.
        "handle_type": f"{type(work).__module__}.{type(work).__qualname__}",
        "is_dist_work": isinstance(work, dist.Work),
        "waited_again": work.wait(),
    }


def blocking_handle(rank: int, world: int) -> dict:
    """What a blocking op hands back: no handle where it ended inside the call."""
    group = dist.group.WORLD
    opts = dist.AllreduceOptions()
    opts.asyncOp = False  # what dist.all_reduce(async_op=False) passes
    ran_at_issue = torch.full((4,), float(rank + 1))
    handed = group.allreduce([ran_at_issue], opts)
    plain = torch.full((3,), float(rank))
    dist.all_reduce(plain)  # torch's own call, which skips wait() on no handle
    # The thread keeps such an op's Work for its next one, but never the caller's tensors: torch
    # keeps a tensor's Python object alive while C++ still holds the tensor.
    import gc
    import weakref

    dropped = torch.ones(5)
    dropped_ref = weakref.ref(dropped)
    dist.all_reduce(dropped)
    del dropped
    gc.collect()
    released = dropped_ref() is None
    # torch.compile's in-flight tracking registers a handle for every op: it still gets one.
    from torch.distributed._functional_collectives import allow_inflight_collective_as_graph_input_ctx

    with allow_inflight_collective_as_graph_input_ctx():
        tracked = group.allreduce([torch.ones(2)], opts)
        tracked_type = type(tracked).__name__
        tracked.wait()
    # A blocking op that fails inside the call hands its handle back, and wait() raises.
    mismatched = torch.ones(10 if rank == 1 else 12)
    failed = group.allreduce([mismatched], opts)
    failure = None
    if failed is not None:
        try:
            failed.wait()
        except Exception as error:  # noqa: BLE001
            failure = type(error).__name__
    # Ops that end at issue after a failed one (which leaves no spare Work) and after ones that
    # do: each hands back nothing and sums its own tensor.
    after = [torch.full((6,), float(rank + k)) for k in range(3)]
    after_handed = [group.allreduce([t], opts) for t in after]
    return {
        "released": released,
        "after_handed": [h is None for h in after_handed],
        "after": [t.tolist() for t in after],
        "after_want": [[float(sum(r + k for r in range(world)))] * 6 for k in range(3)],
        "handed": None if handed is None else type(handed).__name__,
        "value": ran_at_issue.tolist(),
        "want": [float(sum(range(1, world + 1)))] * 4,
        "plain": plain.tolist(),
        "plain_want": [float(sum(range(world)))] * 3,
        "tracked": tracked_type,
        "failed": None if failed is None else type(failed).__name__,
        "failure": failure,
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


def subgroups(rank: int, world: int) -> list:
    """Several overlapping groups alive at once, every op on each."""
    from surface import run_surface

    groups = [dist.new_group([0, 2]), dist.new_group([1, 2, 3]), dist.new_group(list(range(world)))]
    members = [[0, 2], [1, 2, 3], list(range(world))]
    failures = []
    for group, ranks in zip(groups, members):
        if rank in ranks:
            failures += [f"group {ranks}: {f}" for f in run_surface(rank, world, group, sizes=(0, 5, 3000))]
    return failures


def threads(rank: int, world: int) -> list:
    """Two threads issue collectives at once, each on its own group, sync and async."""
    import threading

    groups = [dist.new_group(list(range(world))) for _ in range(2)]
    failures = []

    def issue(index: int) -> None:
        for step in range(30):
            t = torch.full((1000 + step,), float(rank + index))
            work = dist.all_reduce(t, group=groups[index], async_op=step % 2 == 0)
            if work is not None:
                work.wait()
            want = sum(r + index for r in range(world))
            if not torch.all(t == want):
                failures.append(f"thread {index} step {step}: {t[0].item()} != {want}")

    workers = [threading.Thread(target=issue, args=(i,)) for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return failures


def _raised(callable_) -> dict:
    import time

    start = time.monotonic()
    try:
        callable_()
    except Exception as error:  # noqa: BLE001 - the test inspects type and text
        return {"raised": type(error).__name__, "runtime": isinstance(error, RuntimeError),
                "message": str(error), "seconds": time.monotonic() - start}
    return {"raised": None, "message": "", "seconds": time.monotonic() - start}


def mismatch(rank: int, world: int, kind: str) -> dict:
    """Ranks disagree on size, dtype or op; every rank must raise, and the group survive."""
    if kind == "size":
        t, op = torch.ones(8 if rank == 0 else 9), dist.ReduceOp.SUM
    elif kind == "dtype":
        t, op = torch.ones(8, dtype=torch.float32 if rank == 0 else torch.float64), dist.ReduceOp.SUM
    elif kind == "op":
        t, op = torch.ones(8), dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX
    else:  # different collectives
        t, op = torch.ones(8), dist.ReduceOp.SUM
        if rank == 1:
            outcome = _raised(lambda: dist.broadcast(t, src=0))
            after = torch.ones(3)
            dist.all_reduce(after)
            return {**outcome, "after": after.tolist()}
    outcome = _raised(lambda: dist.all_reduce(t, op=op))
    after = torch.ones(3)
    dist.all_reduce(after)
    return {**outcome, "after": after.tolist()}


def mismatch_across_hosts(rank: int, world: int, kind: str) -> dict:
    """Ranks on different hosts disagree on the dtype or the op while the byte sizes agree."""
    if kind == "dtype":
        t, op = torch.ones(8, dtype=torch.float32 if rank == 0 else torch.int32), dist.ReduceOp.SUM
    else:
        t, op = torch.ones(8), dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX
    return _raised(lambda: dist.all_reduce(t, op=op))


def killed_mid_collective(rank: int, world: int) -> dict:
    """The last rank is SIGKILLed (by its own timer, see ranks.py) while all ranks stream
    large all-reduces; the survivors must raise naming it, long before the group timeout."""
    big = torch.ones(16 << 20)

    def stream():
        for _ in range(100000):
            dist.all_reduce(big)

    return _raised(stream)


def never_arrives(rank: int, world: int) -> dict:
    import time

    if rank == world - 1:
        time.sleep(8)  # alive but absent past the group timeout
        return {"raised": None, "message": "absent", "seconds": 0}
    return _raised(lambda: dist.all_reduce(torch.ones(4)))


def unsupported_combination(rank: int, world: int) -> dict:
    """Only rank 0 asks for an impossible reduction: it must fail before any communication,
    so the other ranks never notice and the next collective works everywhere."""
    outcome = {"raised": None}
    if rank == 0:
        outcome = _raised(lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BXOR))
        outcome.update({"avg_int": _raised(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32),
                                                                   op=dist.ReduceOp.AVG))["message"],
                        "uint32": _raised(lambda: dist.all_reduce(torch.ones(4, dtype=torch.uint32)))["message"]})
    after = torch.ones(3)
    dist.all_reduce(after)
    outcome["after"] = after.tolist()
    return outcome


def segment_permissions(rank: int, world: int) -> dict:
    """The group's segment as this process holds it: an anonymous memfd, mode 0600."""
    dist.all_reduce(torch.ones(4))
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/memfd:domino-"):
            found.append({"target": target, "mode": oct(os.stat(f"/proc/self/fd/{fd}").st_mode & 0o777)})
    return {"segments": found, "dev_shm": sorted(n for n in os.listdir("/dev/shm") if "domino" in n)}


def tagged_sum(rank: int, world: int, offset: float) -> float:
    t = torch.full((1 << 16,), float(rank) + offset)
    for _ in range(50):
        u = t.clone()
        dist.all_reduce(u)
    return u[0].item()


def train(rank: int, world: int, kind: str, *args) -> list:
    import training

    return getattr(training, kind)(rank, world, *args)


def overtake(rank: int, world: int, warm: bool) -> dict:
    """A 64 MiB low-priority all-reduce, then a 4 KiB high-priority one: which finishes first?"""
    import time

    import torch_domino

    if warm:  # lanes make their communicators on first use; time the steady state
        for level in ("low", "high"):
            with torch_domino.priority(level):
                dist.all_reduce(torch.ones(1))
    big, small = torch.ones(16 << 20), torch.ones(1024)
    with torch_domino.priority("low"):
        low = dist.all_reduce(big, async_op=True)
    with torch_domino.priority("high"):
        high = dist.all_reduce(small, async_op=True)
    order = []
    while len(order) < 2:
        for name, work in (("high", high), ("low", low)):
            if name not in order and work.is_completed():
                order.append(name)
        time.sleep(0.0002)
    high.wait()
    low.wait()
    return {"order": order, "big_ok": bool((big == world).all()), "small_ok": bool((small == world).all())}


def crossed(rank: int, world: int) -> dict:
    """Rank 0 issues low then high, every other rank high then low: no deadlock, right results."""
    import torch_domino

    a, b = torch.full((1 << 20,), float(rank)), torch.full((257,), float(rank + 1))
    issued = []

    def low():
        with torch_domino.priority("low"):
            issued.append(dist.all_reduce(a, async_op=True))

    def high():
        with torch_domino.priority("high"):
            issued.append(dist.all_reduce(b, async_op=True))

    for step in ((low, high) if rank == 0 else (high, low)):
        step()
    for work in issued:
        work.wait()
    return {"a": a[0].item(), "b": b[0].item(),
            "want_a": float(sum(range(world))), "want_b": float(sum(range(1, world + 1)))}


def scope_waits_on_exit(rank: int, world: int) -> dict:
    import torch_domino

    tensors = [torch.full((1 << 18,), float(rank + i)) for i in range(3)]
    with torch_domino.handles() as scope:
        for t in tensors:
            dist.all_reduce(t, async_op=True)  # handles dropped on purpose
        inside = len(scope)
    return {"inside": inside, "values": [t[0].item() for t in tensors],
            "want": [float(sum(r + i for r in range(world))) for i in range(3)]}


def scope_raises_first_error(rank: int, world: int) -> dict:
    import torch_domino

    try:
        with torch_domino.handles():
            dist.all_reduce(torch.ones(4), async_op=True)
            dist.all_reduce(torch.ones(5 + rank), async_op=True)  # ranks disagree
        return {"raised": None}
    except RuntimeError as error:
        after = torch.ones(2)
        dist.all_reduce(after)
        return {"raised": str(error), "after": after.tolist()}


def scopes_nest(rank: int, world: int) -> dict:
    import torch_domino

    outer_t, inner_t = torch.ones(1 << 16), torch.ones(1 << 16)
    with torch_domino.handles() as outer:
        dist.all_reduce(outer_t, async_op=True)
        with torch_domino.handles() as inner:
            dist.all_reduce(inner_t, async_op=True)
            inner_count = len(inner)
        inner_done = bool((inner_t == world).all())
        outer_count = len(outer)
    return {"inner_count": inner_count, "outer_count": outer_count, "inner_done": inner_done,
            "outer_done": bool((outer_t == world).all())}


def scope_waits_despite_exception(rank: int, world: int) -> dict:
    import torch_domino

    big = torch.ones(8 << 20)
    try:
        with torch_domino.handles():
            dist.all_reduce(big, async_op=True)
            raise KeyError("user code failed")
    except KeyError as error:
        return {"propagated": str(error), "done": bool((big == world).all())}
    return {"propagated": None}


def topology_view(rank: int, world: int) -> dict:
    import torch_domino

    return torch_domino.topology()


def hosts_apart(rank: int, world: int, init_method: str) -> dict:
    """Two simulated hosts: the group's own view of itself, after one all-reduce across them."""
    import torch_domino

    os.environ["DOMINO_HOST_ID"] = f"node-{rank % 2}"
    dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world)
    t = torch.ones(5)
    dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 5
    view = torch_domino.topology()
    dist.destroy_process_group()
    return view


def group_default_lane(rank: int, world: int, init_method: str) -> dict:
    import torch_domino

    options = torch_domino.Options()
    options.priority = "low"
    dist.init_process_group("domino", init_method=init_method, rank=rank, world_size=world,
                            pg_options=options)
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    lane = backend.default_priority
    t = torch.ones(4)
    dist.all_reduce(t)
    dist.destroy_process_group()
    return {"lane": lane, "value": t[0].item()}


def surface_across_hosts(rank: int, world: int, sizes: list, point_to_point: bool = True) -> dict:
    """Every op and dtype on a group whose ranks sit on several (simulated or real) hosts, and
    what the group says about itself."""
    import torch_domino
    from surface import run_surface

    failures = run_surface(rank, world, sizes=tuple(sizes), point_to_point=point_to_point)
    view = torch_domino.topology(sizes=[16 << 20])
    plan = next(p for p in view["routing"]["plans"] if p["op"] == "all_reduce")
    return {"failures": failures, "hosts": [h["ranks"] for h in view["layout"]["hosts"]],
            "inter": view["transports"]["inter_host"], "plan_16m": plan["plan"]}


def plugin_allreduce(rank: int, world: int) -> dict:
    """All-reduces whose inter-host step runs on whatever DOMINO_INTER_TRANSPORT names."""
    import torch_domino

    floats = torch.arange(1000, dtype=torch.float32) + rank
    ints = torch.arange(7, dtype=torch.int64) * (rank + 1)
    dist.all_reduce(floats)
    dist.all_reduce(ints, op=dist.ReduceOp.MAX)
    dist.barrier()
    view = torch_domino.topology(sizes=[4000])
    return {"floats": floats[:3].tolist(), "ints": ints.tolist(),
            "inter": view["transports"]["inter_host"]}


def wait_with_timeout(rank: int, world: int) -> dict:
    """Rank 0 waits 0.3 s on an all-reduce that rank 1 joins only after 2 s: that wait raises,
    the work goes on, and a later wait() gets the right result."""
    import time

    tensor = torch.full((4,), float(rank + 1))
    if rank == 1:
        time.sleep(2.0)
    work = dist.all_reduce(tensor, async_op=True)
    timed_out = ""
    if rank == 0:
        try:
            work.wait(datetime.timedelta(seconds=0.3))
        except RuntimeError as e:
            timed_out = str(e)
    work.wait()
    return {"timed_out": timed_out, "value": tensor.tolist(), "completed": work.is_completed()}


def in_host_algorithm(rank: int, world: int) -> dict:
    """All-reduces on one host under whatever DOMINO_ALGO names, checked exactly, and the plan
    steps the report gives for them."""
    import torch_domino

    expected_scale = world * (world + 1) / 2
    failures = []
    for n in (0, 1, 1000, 70_000, 3_000_000):  # around and far beyond one 128 KiB ring
        t = torch.arange(n, dtype=torch.float32) * (rank + 1)
        dist.all_reduce(t)
        if not torch.equal(t, torch.arange(n, dtype=torch.float32) * expected_scale):
            failures.append(f"float32 sum of {n}")
    ints = torch.full((4097,), rank - 1, dtype=torch.int64)
    dist.all_reduce(ints, op=dist.ReduceOp.MAX)
    if ints.tolist() != [world - 2] * 4097:
        failures.append("int64 max")
    halves = torch.full((300_000,), float(rank), dtype=torch.bfloat16)
    dist.all_reduce(halves, op=dist.ReduceOp.AVG)
    if not torch.equal(halves, torch.full_like(halves, (world - 1) / 2)):
        failures.append("bfloat16 avg")
    view = torch_domino.topology(sizes=[8, 16 << 20])
    steps = {p["bytes"]: p["steps"] for p in view["routing"]["plans"] if p["op"] == "all_reduce"}
    return {"failures": failures, "steps": {str(k): v for k, v in steps.items()}}


def reduction_kernels_in_use(rank: int, world: int) -> str:
    from torch_domino import _C

    return _C.reduction_isa()


def sixteen_bit_all_reduces(rank: int, world: int) -> list:
    """bfloat16 and float16 SUM, AVG and MAX all-reduces against float32 accumulation rounded
    once, at sizes on every shared-memory path. Inputs are multiples of 1/64 below 64 (with a
    few NaN and Inf): their float32 sums are exact in any order but need more bits than either
    16-bit format holds, so a path that rounded a partial sum would differ. A NaN result must
    be the one quiet NaN. Returns the failures."""
    failures = []
    for dtype in (torch.bfloat16, torch.float16):
        for n in (1000, 70_000, 3_000_001):
            parts = []
            for r in range(world):
                g = torch.Generator().manual_seed(1000 * r + n)
                values = torch.randint(-4096, 4096, (n,), generator=g).float() / 64
                values[r::997] = float("nan") if r == 1 else float("inf")
                parts.append(values.to(dtype))
            exact = torch.stack([p.float() for p in parts])
            # MAX as the kernels define it, in rank order: acc < x ? x : acc (a NaN wins only
            # as rank 0's value, as with std::max).
            largest = exact[0]
            for x in exact[1:]:
                largest = torch.where(largest < x, x, largest)
            for op, want in ((dist.ReduceOp.SUM, exact.sum(0)),
                             (dist.ReduceOp.AVG, exact.sum(0) * torch.tensor(1 / world)),
                             (dist.ReduceOp.MAX, largest)):
                got = parts[rank].clone()
                dist.all_reduce(got, op=op)
                nan = want.isnan()
                want = want.to(dtype)
                quiet = 0x7fc0 if dtype == torch.bfloat16 else 0x7e00
                same = torch.where(nan, got.view(torch.int16) == quiet,
                                   got.view(torch.int16) == want.view(torch.int16))
                if not bool(same.all()):
                    bad = int((~same).nonzero()[0])
                    failures.append(f"{dtype} {op} of {n}: element {bad} is {got[bad].item()}, "
                                    f"want {want[bad].item()}")
    return failures
