"""Rank-side checks for the parts of the c10d surface that PyTorch's own suite and FSDP2 need
beyond the basic ops: PREMUL_SUM, all_gather_coalesced, sparse all-reduce, the canonical
``_single`` entry points, monitored_barrier, timeouts, set_timeout and profiler events. Each
returns a list of failure descriptions, computed against local references."""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist

from surface import check

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _ranks_of(group, world):
    return list(range(world)) if group is None else dist.get_process_group_ranks(group)


def _base(rank: int, n: int, dtype) -> torch.Tensor:
    """Small exact values, so that low-precision sums have one right answer."""
    return ((torch.arange(n) % 7 + rank + 1) / 4).to(dtype)


def _premul_reference(n_ranks: int, n: int, dtype, factor: float) -> torch.Tensor:
    scaled = [(_base(r, n, dtype) * torch.tensor(factor, dtype=dtype)).double() for r in range(n_ranks)]
    return torch.stack(scaled).sum(0).to(dtype)


def _close(failures, what, got, want, dtype):
    tol = {torch.float16: 2e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-6)
    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), rtol=tol, atol=tol):
        failures.append(f"{what}: got {got.flatten()[:6].tolist()} want {want.flatten()[:6].tolist()}")


def premul_sum(rank: int, world: int, group=None) -> list:
    failures: list = []
    me = dist.get_rank(group) if group is not None else rank
    n_ranks = dist.get_world_size(group) if group is not None else world
    last = _ranks_of(group, world)[-1]
    for dtype in FLOATS:
        for n in (0, 5, 70000):
            for kind, factor in (("scalar", 0.5), ("tensor", 0.25)):
                op = dist._make_nccl_premul_sum(factor if kind == "scalar" else torch.tensor([factor]))
                want = _premul_reference(n_ranks, n, dtype, factor)
                tag = f"{dtype} n={n} {kind}"
                t = _base(me, n, dtype)
                dist.all_reduce(t, op=op, group=group)
                _close(failures, f"all_reduce premul {tag}", t, want, dtype)
                t = _base(me, n, dtype)
                dist.reduce(t, dst=last, op=op, group=group)
                if me == n_ranks - 1:
                    _close(failures, f"reduce premul {tag}", t, want, dtype)
                else:
                    _close(failures, f"reduce premul leaves non-root input {tag}", t, _base(me, n, dtype), dtype)
                inp = torch.cat([_base(me, n, dtype)] * n_ranks)
                before = inp.clone()
                out = torch.empty(n, dtype=dtype)
                dist.reduce_scatter_tensor(out, inp, op=op, group=group)
                _close(failures, f"reduce_scatter_tensor premul {tag}", out, want, dtype)
                _close(failures, f"reduce_scatter_tensor premul keeps its input {tag}", inp, before, dtype)
                out = torch.empty(n, dtype=dtype)
                dist.reduce_scatter(out, [_base(me, n, dtype)] * n_ranks, op=op, group=group)
                _close(failures, f"reduce_scatter premul {tag}", out, want, dtype)
                pair = [_base(me, n, dtype), _base(me, n + 3, dtype)]
                dist.all_reduce_coalesced(pair, op=op, group=group)
                for k, extra in enumerate((0, 3)):
                    _close(failures, f"all_reduce_coalesced[{k}] premul {tag}", pair[k],
                           _premul_reference(n_ranks, n + extra, dtype, factor), dtype)
                # a parameter that requires grad, and a strided view, are written like any tensor
                param = torch.nn.Parameter(_base(me, n, dtype))
                dist.all_reduce(param, op=op, group=group)
                _close(failures, f"all_reduce premul into a Parameter {tag}", param.detach(), want, dtype)
                strided = _base(me, 2 * n, dtype)[::2]
                dist.all_reduce(strided, op=op, group=group)
                want_strided = torch.stack([(_base(r, 2 * n, dtype)[::2] * torch.tensor(factor, dtype=dtype)).double()
                                            for r in range(n_ranks)]).sum(0).to(dtype)
                _close(failures, f"all_reduce premul strided {tag}", strided, want_strided, dtype)
                outs = [torch.empty(n, dtype=dtype), torch.empty(n + 1, dtype=dtype)]
                ins = [torch.cat([_base(me, n, dtype)] * n_ranks),
                       torch.cat([_base(me, n + 1, dtype)] * n_ranks)]
                single = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)
                with dist._coalescing_manager(group=group, async_ops=True) as cm:
                    for o, i in zip(outs, ins):
                        single(o, i, op=op, group=group, async_op=True)
                cm.wait()
                for k, extra in enumerate((0, 1)):
                    _close(failures, f"reduce_scatter coalesced[{k}] premul {tag}", outs[k],
                           _premul_reference(n_ranks, n + extra, dtype, factor), dtype)
    return failures


def gathers_and_sparse(rank: int, world: int, group=None) -> list:
    failures: list = []
    me = dist.get_rank(group) if group is not None else rank
    n_ranks = dist.get_world_size(group) if group is not None else world
    last = _ranks_of(group, world)[-1]
    # all_gather_coalesced: tensors of different shapes, one of them empty
    shapes = [(3,), (2, 2), (0,), (4, 1, 2)]
    ins = [torch.full(s, float(me * 10 + k)) for k, s in enumerate(shapes)]
    outs = [[torch.empty(s) for s in shapes] for _ in range(n_ranks)]
    dist.all_gather_coalesced(outs, ins, group=group)
    for r in range(n_ranks):
        for k, s in enumerate(shapes):
            check(failures, f"all_gather_coalesced[{r}][{k}]", outs[r][k], torch.full(s, float(r * 10 + k)),
                  torch.float32)
    # canonical single-tensor entry points (torch 2.14), where this torch has them
    mine = torch.arange(5, dtype=torch.float32) + 100 * me
    everyone = torch.cat([torch.arange(5, dtype=torch.float32) + 100 * r for r in range(n_ranks)])
    if hasattr(dist, "gather_single"):
        flat = torch.empty(5 * n_ranks) if me == n_ranks - 1 else None
        dist.gather_single(mine, flat, dst=last, group=group)
        if me == n_ranks - 1:
            check(failures, "gather_single", flat, everyone, torch.float32)
        flat = torch.empty(5 * n_ranks)
        dist.all_gather_single(flat, mine, group=group)
        check(failures, "all_gather_single", flat, everyone, torch.float32)
        out = torch.empty(5)
        dist.reduce_scatter_single(out, torch.cat([mine] * n_ranks), group=group)
        check(failures, "reduce_scatter_single", out, sum(torch.arange(5.0) + 100 * r for r in range(n_ranks)),
              torch.float32)
    # sparse all-reduce: overlapping and distinct entries, duplicates within a rank too
    for dtype in (torch.float32, torch.float64, torch.int64):
        def sparse_of(r):
            idx = torch.tensor([[r % 4, 0, r % 4], [1, 2, 1]])
            val = torch.tensor([1, r + 2, 3], dtype=dtype)
            return torch.sparse_coo_tensor(idx, val, (4, 3))
        t = sparse_of(me)
        dist.all_reduce(t, group=group)
        want = sum(sparse_of(r).to_dense() for r in range(n_ranks))
        check(failures, f"sparse all_reduce {dtype}", t.to_dense(), want, dtype)
        if not t.is_coalesced():
            failures.append(f"sparse all_reduce {dtype}: result not coalesced")
    # uneven entry counts, rank 0 with none: the others' entries are padded on the wire
    def uneven(r):
        idx = torch.tensor([[k % 5 for k in range(r)], [(k * r) % 6 for k in range(r)]], dtype=torch.long)
        return torch.sparse_coo_tensor(idx.reshape(2, r), torch.arange(r, dtype=torch.float32) + 1, (5, 6))
    t = uneven(me)
    dist.all_reduce(t, group=group)
    check(failures, "sparse all_reduce, uneven nnz", t.to_dense(),
          sum(uneven(r).to_dense() for r in range(n_ranks)), torch.float32)
    if n_ranks > 1:  # ranks that disagree on the shape are all told, and the group goes on
        try:
            dist.all_reduce(torch.zeros(4, 3 + me).to_sparse(), group=group)
            failures.append("sparse tensors of different shapes were accepted")
        except Exception as error:  # noqa: BLE001
            if "differs" not in str(error):
                failures.append(f"sparse shape mismatch error: {error}")
    # sparse with values of more than one dimension (hybrid tensors)
    t = torch.sparse_coo_tensor(torch.tensor([[me % 3]]), torch.full((1, 2), float(me + 1)), (3, 2))
    dist.all_reduce(t, group=group)
    want = sum(torch.sparse_coo_tensor(torch.tensor([[r % 3]]), torch.full((1, 2), float(r + 1)),
                                       (3, 2)).to_dense() for r in range(n_ranks))
    check(failures, "sparse hybrid all_reduce", t.to_dense(), want, torch.float32)
    try:
        dist.all_reduce(torch.zeros(3).to_sparse(), op=dist.ReduceOp.MAX, group=group)
        failures.append("sparse MAX was accepted")
    except Exception as error:  # noqa: BLE001
        if "SUM" not in str(error):
            failures.append(f"sparse MAX error does not say SUM: {error}")
    return failures


def contract_surface(rank: int, world: int) -> list:
    """Every check above on the world group and on a sub-group of all ranks but the first."""
    failures = [f"world: {f}" for f in premul_sum(rank, world) + gathers_and_sparse(rank, world)]
    others = dist.new_group(list(range(1, world))) if world > 1 else None
    if others is not None and rank != 0:
        failures += [f"sub-group: {f}" for f in premul_sum(rank, world, others) +
                     gathers_and_sparse(rank, world, others)]
    dist.barrier()
    return failures


def _monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """dist.monitored_barrier; before torch 2.14 it refuses every backend but Gloo in Python, so
    there the group's own monitored_barrier, which it would have called, is called directly."""
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 14):
        return dist.monitored_barrier(group, timeout=timeout, wait_all_ranks=wait_all_ranks)
    return (group or dist.group.WORLD).monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def monitored(rank: int, world: int) -> dict:
    """monitored_barrier passes when all come, then names whoever stays away."""
    result = {"passed": False, "error": None}
    _monitored_barrier(timeout=datetime.timedelta(seconds=10))
    _monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    sub = dist.new_group(list(range(world)))
    _monitored_barrier(sub, timeout=datetime.timedelta(seconds=10))
    result["passed"] = True
    # Ranks 1 and, in bigger worlds, the last stay away from the next one on the sub-group.
    away = {1, world - 1} if world > 2 else {1}
    if rank not in away:
        start = time.monotonic()
        try:
            _monitored_barrier(sub, timeout=datetime.timedelta(seconds=1), wait_all_ranks=True)
        except RuntimeError as error:
            result["error"] = str(error)
            result["seconds"] = time.monotonic() - start
    dist.barrier()
    if rank == 0:
        try:
            sub.monitored_barrier(datetime.timedelta(seconds=0))
        except RuntimeError as error:
            result["zero_timeout_error"] = str(error)
    dist.barrier()
    return result


def timeouts(rank: int, world: int) -> dict:
    """A barrier only rank 0 enters fails with c10d's wording after the group's timeout, also
    after set_timeout changed it."""
    result = {}
    for label, make in (("created", lambda: dist.new_group(timeout=datetime.timedelta(seconds=2))),
                        ("set", lambda: dist.new_group(timeout=datetime.timedelta(seconds=120)))):
        group = make()
        dist.barrier(group)  # the lane's communicator exists before the timeout changes
        if label == "set":
            dist.set_timeout(datetime.timedelta(seconds=2), group)
        if rank == 0:
            start = time.monotonic()
            try:
                dist.barrier(group)
                result[label] = {"error": None}
            except Exception as error:  # noqa: BLE001
                result[label] = {"error": str(error), "seconds": time.monotonic() - start}
        dist.barrier()
    return result


def profiled(rank: int, world: int) -> dict:
    """What a torch.profiler trace shows of domino's communication."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(1000)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        dist.all_reduce(x)
        work = dist.all_reduce(x, async_op=True)
        time.sleep(0.3)  # the lane starts it meanwhile: the event is on the lane's thread
        work.wait()
        dist.broadcast(x, 0)
        out = torch.empty(1000 * world)
        dist.all_gather_into_tensor(out, x)
        dist.reduce_scatter_tensor(x, out)
        if world > 1:
            if rank == 0:
                dist.send(x, 1)
            elif rank == 1:
                dist.recv(x, 0)
        dist.barrier()
        y = torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # compute beside it
    del y
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    seen: dict = {}
    main_thread = None
    for event in events:
        name = str(event.get("name", ""))
        if name == "aten::mm":
            main_thread = event.get("tid")
        if name.startswith("domino:") and event.get("ph") == "X":
            entry = seen.setdefault(name, {"count": 0, "dims": [], "threads": []})
            entry["count"] += 1
            entry["dims"].append(event.get("args", {}).get("Input Dims"))
            entry["threads"].append(str(event.get("tid")))
            entry["dur"] = max(entry.get("dur", 0), event.get("dur", 0))
    return {"events": seen, "main_thread": str(main_thread)}


def wire_settings(rank: int, world: int, sizes: list) -> dict:
    """Collectives run, and are right, although the ranks started with different settings."""
    import torch_domino

    failures = []
    for n in sizes:
        t = torch.full((n,), float(rank + 1))
        dist.all_reduce(t)
        check(failures, f"all_reduce n={n}", t, torch.full((n,), float(world * (world + 1) / 2)),
              torch.float32)
        out = torch.empty(n * world)
        dist.all_gather_into_tensor(out, torch.full((n,), float(rank)))
        check(failures, f"all_gather n={n}", out,
              torch.cat([torch.full((n,), float(r)) for r in range(world)]), torch.float32)
    return {"failures": failures, "settings": torch_domino.topology()["settings"]}


def fsdp2_divide_factor(rank: int, world: int, factor: float) -> dict:
    """FSDP2 with set_reduce_scatter_divide_factor (PREMUL_SUM on the wire): the gradients are
    the sum of every rank's local gradients divided by factor."""
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))

    def batch(r):
        g = torch.Generator().manual_seed(100 + r)
        return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)

    reference = make()
    for r in range(world):
        x, y = batch(r)
        nn.functional.mse_loss(reference(x), y).backward()  # grads add up over the ranks
    want = [p.grad / factor for p in reference.parameters()]

    mesh = init_device_mesh("cpu", (world,))
    model = make()
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    fully_shard(model, mesh=mesh)
    for module in (model[0], model[2], model):  # each fully_shard module has its own
        module.set_reduce_scatter_divide_factor(factor)
    x, y = batch(rank)
    try:
        nn.functional.mse_loss(model(x), y).backward()
    except Exception as error:  # noqa: BLE001 - Gloo refuses PREMUL_SUM; the test shows it
        return {"error": str(error)[:500]}
    worst = 0.0
    for p, w in zip(model.parameters(), want):
        worst = max(worst, (p.grad.full_tensor() - w).abs().max().item())
    return {"max_error": worst}
