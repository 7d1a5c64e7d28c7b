"""Every c10d op x dtype through the active backend, against locally computed references.

Each rank can compute every other rank's input (inputs are a function of the rank), so the
reference is computed on the spot. Returns a list of failure descriptions (empty when right).
"""

from __future__ import annotations

import warnings

import torch
import torch.distributed as dist

warnings.filterwarnings("ignore", category=FutureWarning)

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
DTYPES = FLOATS + INTS + [torch.bool]
R = dist.ReduceOp


def reduce_ops(dtype):
    if dtype in FLOATS:
        return [R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX]
    return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]


def value(rank: int, n: int, dtype, op=None) -> torch.Tensor:
    """Rank `rank`'s input: small exact integers (1 or 2 for PRODUCT so products stay exact)."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool:
        return ((i + rank) % 3 == 0)
    if op == R.PRODUCT:
        return (1 + (i + rank) % 2).to(dtype)
    return ((i * 7 + rank * 3) % 11).to(dtype)


def reference(world: int, n: int, dtype, op) -> torch.Tensor:
    return combine([value(r, n, dtype, op) for r in range(world)], dtype, op)


def combine(inputs: list, dtype, op) -> torch.Tensor:
    """What reducing these per-rank inputs with op must give."""
    world = len(inputs)
    if dtype == torch.bool:
        stack = torch.stack(inputs).to(torch.uint8)
        combine = {R.SUM: lambda s: s.amax(0), R.MAX: lambda s: s.amax(0), R.BOR: lambda s: s.amax(0),
                   R.PRODUCT: lambda s: s.amin(0), R.MIN: lambda s: s.amin(0), R.BAND: lambda s: s.amin(0),
                   R.BXOR: lambda s: s.sum(0) % 2}
        return combine[op](stack).to(torch.bool)
    wide = torch.float32 if dtype in (torch.float16, torch.bfloat16) else (
        torch.float64 if dtype == torch.float64 else (torch.float32 if dtype == torch.float32 else torch.int64))
    stack = torch.stack([t.to(wide) for t in inputs])
    if op == R.SUM:
        out = stack.sum(0)
    elif op == R.AVG:
        out = stack.sum(0) * (1.0 / world)
    elif op == R.PRODUCT:
        out = stack.prod(0)
    elif op == R.MIN:
        out = stack.amin(0)
    elif op == R.MAX:
        out = stack.amax(0)
    else:
        out = stack[0].clone()
        for t in stack[1:]:
            out = {R.BAND: torch.bitwise_and, R.BOR: torch.bitwise_or, R.BXOR: torch.bitwise_xor}[op](out, t)
    return out.to(dtype)


def same(got: torch.Tensor, want: torch.Tensor, dtype) -> bool:
    if got.shape != want.shape:
        return False
    if dtype in (torch.float16, torch.bfloat16):
        return torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    if dtype in FLOATS:
        return torch.allclose(got, want, rtol=1e-6, atol=1e-6)
    return torch.equal(got, want)


def check(failures: list, what: str, got, want, dtype) -> None:
    if not same(got, want, dtype):
        failures.append(f"{what}: got {got.flatten()[:6].tolist()} want {want.flatten()[:6].tolist()}")


def run_surface(rank: int, world: int, group=None, sizes=(0, 1, 37, 70000, 300000),
                point_to_point: bool = True) -> list:
    """All ops on `group` (default: world), without send/recv if not point_to_point; returns
    failure descriptions."""
    failures: list = []
    me = dist.get_rank(group) if group is not None else rank
    n_ranks = dist.get_world_size(group) if group is not None else world
    to_global = (lambda r: dist.get_global_rank(group, r)) if group is not None else (lambda r: r)
    for dtype in DTYPES:
        for n in sizes:
            tag = f"{dtype} n={n}"
            for op in reduce_ops(dtype):
                # all_reduce, contiguous and through a strided (non-contiguous) view
                t = value(me, n, dtype, op)
                dist.all_reduce(t, op=op, group=group)
                check(failures, f"all_reduce {op} {tag}", t, reference(n_ranks, n, dtype, op), dtype)
                strided = value(me, 2 * n, dtype, op)[::2]
                dist.all_reduce(strided, op=op, group=group)
                want = combine([value(r, 2 * n, dtype, op)[::2] for r in range(n_ranks)], dtype, op)
                check(failures, f"all_reduce strided {op} {tag}", strided, want, dtype)
                # reduce to the last rank
                t = value(me, n, dtype, op)
                dist.reduce(t, dst=to_global(n_ranks - 1), op=op, group=group)
                if me == n_ranks - 1:
                    check(failures, f"reduce {op} {tag}", t, reference(n_ranks, n, dtype, op), dtype)
                # reduce_scatter_tensor: block r of rank q is value(q, n)
                inp = torch.cat([value(me, n, dtype, op)] * n_ranks)
                out = torch.empty(n, dtype=dtype)
                dist.reduce_scatter_tensor(out, inp, op=op, group=group)
                check(failures, f"reduce_scatter_tensor {op} {tag}", out, reference(n_ranks, n, dtype, op), dtype)
            if n > 1000:
                continue  # the list-shaped and movement ops below need no large sizes twice
            mine = value(me, n, dtype)
            everyone = [value(r, n, dtype) for r in range(n_ranks)]
            # reduce_scatter with lists, and all_reduce_coalesced
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out, [value(me, n, dtype)] * n_ranks, group=group)
            check(failures, f"reduce_scatter {tag}", out, reference(n_ranks, n, dtype, R.SUM), dtype)
            pair = [value(me, n, dtype), value(me, n + 3, dtype)]
            dist.all_reduce_coalesced(pair, group=group)
            check(failures, f"all_reduce_coalesced[0] {tag}", pair[0], reference(n_ranks, n, dtype, R.SUM), dtype)
            check(failures, f"all_reduce_coalesced[1] {tag}", pair[1], reference(n_ranks, n + 3, dtype, R.SUM), dtype)
            # broadcast from the last rank
            t = mine.clone()
            dist.broadcast(t, src=to_global(n_ranks - 1), group=group)
            check(failures, f"broadcast {tag}", t, everyone[-1], dtype)
            # all_gather (list) and into one tensor
            outs = [torch.empty(n, dtype=dtype) for _ in range(n_ranks)]
            dist.all_gather(outs, mine, group=group)
            for r in range(n_ranks):
                check(failures, f"all_gather[{r}] {tag}", outs[r], everyone[r], dtype)
            flat = torch.empty(n * n_ranks, dtype=dtype)
            dist.all_gather_into_tensor(flat, mine, group=group)
            check(failures, f"all_gather_into_tensor {tag}", flat, torch.cat(everyone), dtype)
            # gather to rank 0, scatter from rank 0
            gathered = [torch.empty(n, dtype=dtype) for _ in range(n_ranks)] if me == 0 else None
            dist.gather(mine, gathered, dst=to_global(0), group=group)
            if me == 0:
                for r in range(n_ranks):
                    check(failures, f"gather[{r}] {tag}", gathered[r], everyone[r], dtype)
            piece = torch.empty(n, dtype=dtype)
            dist.scatter(piece, everyone if me == 0 else None, src=to_global(0), group=group)
            check(failures, f"scatter {tag}", piece, everyone[me], dtype)
            # all_to_all_single with uneven splits: rank s sends s + d + (n % 3) rows to rank d
            send_splits = [me + d + n % 3 for d in range(n_ranks)]
            recv_splits = [s + me + n % 3 for s in range(n_ranks)]
            src = torch.cat([value(me * 10 + d, k, dtype) for d, k in enumerate(send_splits)])
            dst = torch.empty(sum(recv_splits), dtype=dtype)
            dist.all_to_all_single(dst, src, recv_splits, send_splits, group=group)
            want = torch.cat([value(s * 10 + me, k, dtype) for s, k in enumerate(recv_splits)])
            check(failures, f"all_to_all_single {tag}", dst, want, dtype)
            # all_to_all with lists
            outs = [torch.empty(n, dtype=dtype) for _ in range(n_ranks)]
            dist.all_to_all(outs, [value(me * 10 + d, n, dtype) for d in range(n_ranks)], group=group)
            for s in range(n_ranks):
                check(failures, f"all_to_all[{s}] {tag}", outs[s], value(s * 10 + me, n, dtype), dtype)
            # send/recv around the ring
            if n_ranks > 1 and point_to_point:
                nxt, prv = (me + 1) % n_ranks, (me - 1) % n_ranks
                got = torch.empty(n, dtype=dtype)
                ops = [dist.P2POp(dist.isend, mine, to_global(nxt), group),
                       dist.P2POp(dist.irecv, got, to_global(prv), group)]
                for w in dist.batch_isend_irecv(ops):
                    w.wait()
                check(failures, f"send/recv ring {tag}", got, everyone[prv], dtype)
    dist.barrier(group=group)
    return failures
