"""Rank-side bodies of the sequence-parallel tests: the same weights and input through a Domino
model with and without sequence_parallel; each rank compares its rows of the output and input
gradient, and every parameter gradient, with the model that holds the whole sequence."""

from __future__ import annotations

import torch
import torch.distributed as dist

from torch_domino import overlap as ov

SEQ, BATCH = 8, 4


def _rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    n = t.shape[0] // world
    return t[rank * n:(rank + 1) * n]


def _step(model, x, probe):
    x = x.detach().clone().requires_grad_()
    out = model(x)
    (out * probe).sum().backward()
    return out.detach(), x.grad, {n: p.grad for n, p in model.named_parameters()}


def _worst(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max().clamp(min=1.0)).item()


def compare(rank: int, world: int, cfgs: list, make: str = "DominoTransformer",
            train: bool = False) -> list:
    """For each config: the plain model and the sequence-parallel one, the same weights (drawn
    from one seed) and dropout seed; the worst relative difference of each compared tensor."""
    reports = []
    for cfg in cfgs:
        cls = getattr(ov, make)
        plain = cls(ov.TransformerConfig(**cfg))
        cut = cls(ov.TransformerConfig(**{**cfg, "sequence_parallel": True}))
        cut.load_state_dict(plain.state_dict())
        plain.train(train)
        cut.train(train)
        g = torch.Generator().manual_seed(5)
        x = torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g)
        probe = torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g)
        torch.manual_seed(21)  # the dropout seed of the pass, for both
        out, dx, grads = _step(plain, x, probe)
        torch.manual_seed(21)
        out_sp, dx_sp, grads_sp = _step(cut, _rows(x, rank, world), _rows(probe, rank, world))
        worst = {"output": _worst(out_sp, _rows(out, rank, world)),
                 "input.grad": _worst(dx_sp, _rows(dx, rank, world))}
        for name, grad in grads.items():
            worst[name] = _worst(grads_sp[name], grad)
        reports.append({"config": cfg, "worst": worst})
    return reports


def linear_pair(rank: int, world: int) -> dict:
    """ColumnParallelLinear and RowParallelLinear with sequence_parallel, against the plain pair."""
    h = 16
    g = torch.Generator().manual_seed(3)
    full = {"c.weight": torch.randn(4 * h, h, generator=g), "c.bias": torch.randn(4 * h, generator=g),
            "r.weight": torch.randn(h, 4 * h, generator=g), "r.bias": torch.randn(h, generator=g)}

    def pair(sequence_parallel: bool):
        c = ov.ColumnParallelLinear(h, 4 * h, sequence_parallel=sequence_parallel)
        r = ov.RowParallelLinear(4 * h, h, sequence_parallel=sequence_parallel)
        c.load_unsharded({"weight": full["c.weight"], "bias": full["c.bias"]})
        r.load_unsharded({"weight": full["r.weight"], "bias": full["r.bias"]})
        return c, r

    x = torch.randn(SEQ, BATCH, h, generator=g)
    probe = torch.randn(SEQ, BATCH, h, generator=g)
    results = {}
    for sequence_parallel in (False, True):
        c, r = pair(sequence_parallel)
        xi = (_rows(x, rank, world) if sequence_parallel else x).clone().requires_grad_()
        out = r(torch.tanh(c(xi)))
        (out * (_rows(probe, rank, world) if sequence_parallel else probe)).sum().backward()
        results[sequence_parallel] = (out.detach(), xi.grad, c.weight.grad, r.weight.grad,
                                      r.bias.grad, c.bias.grad)
    plain, cut = results[False], results[True]
    return {"output": _worst(cut[0], _rows(plain[0], rank, world)),
            "input.grad": _worst(cut[1], _rows(plain[1], rank, world)),
            "column.weight.grad": _worst(cut[2], plain[2]),
            "row.weight.grad": _worst(cut[3], plain[3]),
            "row.bias.grad": _worst(cut[4], plain[4]),
            "column.bias.grad": _worst(cut[5], plain[5])}


def recompute(rank: int, world: int, cfg: dict) -> dict:
    """Sequence parallel with dropout: recompute=True gives the step without it, bit for bit."""
    base = ov.DominoTransformer(ov.TransformerConfig(**{**cfg, "sequence_parallel": True}))
    again = ov.DominoTransformer(ov.TransformerConfig(**{**cfg, "sequence_parallel": True,
                                                         "recompute": True}))
    again.load_state_dict(base.state_dict())
    g = torch.Generator().manual_seed(5)
    x = _rows(torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g), rank, world)
    probe = torch.randn(x.shape, generator=g)
    steps = []
    for model in (base, again):
        model.train()
        torch.manual_seed(33)
        steps.append(_step(model, x, probe))
    same = torch.equal(steps[0][0], steps[1][0]) and torch.equal(steps[0][1], steps[1][1])
    same = same and all(torch.equal(steps[0][2][n], steps[1][2][n]) for n in steps[0][2])
    dropped = bool((steps[0][0] != base.eval()(x).detach()).any())
    return {"same": same, "dropout_active": dropped}


def autocast(rank: int, world: int, cfg: dict) -> dict:
    """Under torch.autocast (bf16 compute, fp32 weights), a row split whose input-gradient
    reductions are deferred against the naive schedule that waits each at once: the worst
    relative difference of the input gradient and every weight gradient, with and without
    sequence parallelism."""
    worst = {}
    for sp in (False, True):
        models = [ov.DominoTransformer(ov.TransformerConfig(**cfg, split=split,
                                                            sequence_parallel=sp))
                  for split in ("row", "none")]
        g = torch.Generator().manual_seed(5)
        x = torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g)
        probe = torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g)
        if sp:
            x, probe = _rows(x, rank, world), _rows(probe, rank, world)
        steps = []
        for model in models:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                steps.append(_step(model, x, probe))
        (_, dx, grads), (_, dx_ref, grads_ref) = steps
        worst[f"sp={sp} input.grad"] = _worst(dx.float(), dx_ref.float())
        for name in grads:
            worst[f"sp={sp} {name}"] = _worst(grads[name].float(), grads_ref[name].float())
    return worst
