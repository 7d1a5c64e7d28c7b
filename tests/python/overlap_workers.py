"""Rank-side bodies of the Domino layer tests: each builds layers over the world group, loads
the same unsharded weights as the plain reference, and reports how far it is from it."""

from __future__ import annotations

import torch
import torch.distributed as dist

import reference_transformer as ref
from torch_domino import overlap as ov

SEQ, BATCH = 6, 5


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 2e-4,
           floor: float = 1.0) -> tuple[bool, float]:
    err = (a - b).abs().max().item() if a.numel() else 0.0
    scale = max(b.abs().max().item(), floor) if b.numel() else 1.0
    return err <= tol * scale, err


def _compare(model, reference_fn, state: dict, x: torch.Tensor, tol: float = 2e-4,
             floor: float = 1.0) -> dict:
    """Forward, then backward of a random projection of the output; compares output, input
    gradient and every parameter gradient (as this rank's shard of the reference's)."""
    xs = x.detach().clone().to(next(model.parameters()).dtype).requires_grad_()
    xr = x.detach().clone().requires_grad_()
    leaves = {k: v.clone().requires_grad_() for k, v in state.items()}
    out = model(xs)
    expected = reference_fn(leaves, xr)
    probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(3)).to(expected.device)
    (out * probe).sum().backward()
    (expected * probe).sum().backward()
    report = {"ok": True, "worst": ""}
    checks = [("output", out, expected), ("input.grad", xs.grad, xr.grad)]
    for name, param in model.named_parameters():
        want = model.shard_of(name, leaves[name].grad.cpu()).to(param.device)
        checks.append((name + ".grad", param.grad, want))
    worst = 0.0
    for name, got, want in checks:
        if got is None or got.shape != want.shape:
            report.update(ok=False, worst=f"{name}: missing or shape {None if got is None else tuple(got.shape)}")
            return report
        ok, err = _close(got.float(), want.float(), tol, floor)
        if not ok:
            report["ok"] = False
            scale = max(want.abs().max().item(), floor) if want.numel() else 1.0
            report.setdefault("failed", []).append(f"{name} {err:.2e} of scale {scale:.2e}")
        if err >= worst:
            worst = err
            report["worst"] = f"{name} {err:.2e}"
    return report


def _input(cfg: dict, seed: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(SEQ, BATCH, cfg["hidden_size"], generator=g)


def transformer_numerics(rank: int, world: int, configs: list, drop_communication: bool = False) -> list:
    torch.manual_seed(0)
    results = []
    for cfg in configs:
        state = ref.full_state(cfg, seed=11)
        model = ov.DominoTransformer(ov.TransformerConfig(**cfg))
        model.load_unsharded(state)
        model._drop_communication_for_benchmark(drop_communication)
        report = _compare(model, lambda s, x: ref.transformer(cfg, s, x), state, _input(cfg))
        report["config"] = cfg
        results.append(report)
    return results


def _strip(state: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def layer_numerics(rank: int, world: int, cfg: dict) -> dict:
    """Each layer class on its own against the matching reference piece."""
    layer_state = ref.full_state(cfg, seed=13, layers=1, prefix="", final_norm=False)
    x = _input(cfg)
    reports = {}

    layer = ov.DominoTransformerLayer(ov.TransformerConfig(**cfg))
    layer.load_unsharded(layer_state)
    reports["DominoTransformerLayer"] = _compare(layer, lambda s, v: ref.layer(cfg, s, "", v), layer_state, x)

    attention_state = _strip(layer_state, "attention.")
    attention = ov.ShardedAttention(ov.TransformerConfig(**cfg))
    attention.load_unsharded(attention_state)
    reports["ShardedAttention"] = _compare(
        attention, lambda s, v: ref.attention(cfg, s, "", v), attention_state, x)

    mlp_state = _strip(layer_state, "mlp.")
    mlp = ov.ParallelMLP(ov.TransformerConfig(**cfg))
    mlp.load_unsharded(mlp_state)
    reports["ParallelMLP"] = _compare(mlp, lambda s, v: ref.mlp(cfg, s, "", v), mlp_state, x)

    h = cfg["hidden_size"]
    column = ov.ColumnParallelLinear(h, 4 * h)
    row = ov.RowParallelLinear(4 * h, h)
    g = torch.Generator().manual_seed(17)
    pair_state = {"weight": torch.randn(4 * h, h, generator=g), "bias": torch.randn(4 * h, generator=g),
                  "row.weight": torch.randn(h, 4 * h, generator=g), "row.bias": torch.randn(h, generator=g)}
    column.load_unsharded({"weight": pair_state["weight"], "bias": pair_state["bias"]})
    row.load_unsharded({"weight": pair_state["row.weight"], "bias": pair_state["row.bias"]})

    class Pair(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.column, self.row = column, row

        def forward(self, v):
            return self.row(torch.tanh(self.column(v)))

        def shard_of(self, name, full):
            owner, _, leaf = name.partition(".")
            return getattr(self, owner).shard_of(leaf, full)

    def pair_reference(s, v):
        return torch.nn.functional.linear(torch.tanh(torch.nn.functional.linear(v, s["column.weight"], s["column.bias"])),
                                          s["row.weight"], s["row.bias"])

    named = {"column.weight": pair_state["weight"], "column.bias": pair_state["bias"],
             "row.weight": pair_state["row.weight"], "row.bias": pair_state["row.bias"]}
    reports["Column+RowParallelLinear"] = _compare(Pair(), pair_reference, named, x)
    return reports


def dropout_behaviour(rank: int, world: int, cfg: dict) -> dict:
    """Dropout on: deterministic under the seed and the default generator, identical on every TP
    rank where the activation is replicated (even when the ranks' default generators differ),
    and independent of how the batch is cut."""
    x = _input(cfg)

    def run(default_seed=0, **overrides):
        model = ov.DominoTransformer(ov.TransformerConfig(**{**cfg, **overrides}))
        model.train()
        # Rank 1 seeded otherwise: rank 0's pass seed is the group's.
        torch.manual_seed(default_seed + 1000 * rank)
        return model(x).detach()

    first = run()
    again = run()
    # Nothing drops: the default generator is left alone.
    quiet = ov.DominoTransformer(ov.TransformerConfig(**{**cfg, "hidden_dropout": 0.0,
                                                         "attention_dropout": 0.0}))
    quiet.train()
    state = torch.get_rng_state()
    quiet(x)
    evaluating = ov.DominoTransformer(ov.TransformerConfig(**cfg))
    evaluating.eval()
    evaluating(x)
    untouched = torch.equal(state, torch.get_rng_state())
    unsplit = run(split="row", micro_batches=1, column_chunks=1)
    other_seed = run(seed=cfg.get("seed", 1234) + 1)
    other_default = run(default_seed=1)
    model = ov.DominoTransformer(ov.TransformerConfig(**cfg))
    model.eval()
    eval_a, eval_b = model(x).detach(), model(x).detach()
    gathered = [torch.empty_like(first) for _ in range(world)]
    dist.all_gather(gathered, first)
    return {
        "deterministic": torch.equal(first, again),
        "same_on_every_rank": all(torch.equal(gathered[0], g) for g in gathered),
        "independent_of_split": torch.allclose(first, unsplit, rtol=1e-5, atol=1e-5),
        "seed_matters": not torch.allclose(first, other_seed),
        "default_generator_matters": not torch.allclose(first, other_default),
        "eval_and_no_dropout_leave_the_default_generator": untouched,
        "eval_is_deterministic": torch.equal(eval_a, eval_b),
        "dropout_active": not torch.allclose(first, eval_a),
    }


def lanes_used(rank: int, world: int, cfg: dict) -> dict:
    model = ov.DominoTransformer(ov.TransformerConfig(**cfg))
    x = _input(cfg).requires_grad_()
    model(x).sum().backward()
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    return backend._issued_per_lane()


def rejects(rank: int, world: int) -> dict:
    """Shapes that cannot be sharded over this group, or inputs that do not fit, raise clearly."""
    messages = {}

    def catch(key, fn):
        try:
            fn()
            messages[key] = ""
        except ValueError as e:
            messages[key] = str(e)

    base = dict(hidden_size=48, num_attention_heads=8, num_layers=1)
    catch("heads", lambda: ov.DominoTransformer(ov.TransformerConfig(**{**base, "num_attention_heads": 3})))
    catch("ffn", lambda: ov.ParallelMLP(ov.TransformerConfig(**{**base, "ffn_hidden_size": 3 * world + 1})))
    model = ov.DominoTransformer(ov.TransformerConfig(**{**base, "micro_batches": 4}))
    catch("micro_batches", lambda: model(torch.randn(SEQ, 3, 48)))
    catch("hidden", lambda: model(torch.randn(SEQ, 4, 40)))
    catch("split", lambda: ov.TransformerConfig(**{**base, "split": "diagonal"}).validate(world))
    catch("unsharded", lambda: model.load_unsharded({}))
    catch("attention_hidden", lambda: ov.ShardedAttention(ov.TransformerConfig(**base))(torch.randn(SEQ, 4, 40)))
    catch("mlp_hidden", lambda: ov.ParallelMLP(ov.TransformerConfig(**base))(torch.randn(SEQ, 4, 40)))
    return messages


def backward_order(rank: int, world: int, micro_batches: int) -> list:
    """The order in which autograd runs the column-parallel backward nodes and the nodes that
    wait for their input-gradient reductions."""
    model = ov.DominoTransformer(ov.TransformerConfig(
        hidden_size=48, num_attention_heads=8, num_layers=1, split="row",
        micro_batches=micro_batches))
    out = model(_input({"hidden_size": 48}).requires_grad_())
    order, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for kind in ("ColumnParallelLinearFunction", "WaitForInputGradient"):
            if kind in node.name():
                node.register_prehook(lambda grads, kind=kind: order.append(kind))
        stack.extend(next_node for next_node, _ in node.next_functions)
    out.sum().backward()
    return order


def low_precision(rank: int, world: int, dtype: str, schedule: dict) -> dict:
    """params_dtype bfloat16/float16: the model runs in that dtype and stays close to the fp32
    reference (to the dtype's precision)."""
    cfg = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=2,
               activation="swiglu", normalization="rmsnorm", rotary=True, params_dtype=dtype,
               **schedule)
    state = ref.full_state(cfg, seed=11)
    model = ov.DominoTransformer(ov.TransformerConfig(**cfg))
    model.load_unsharded(state)
    x = _input(cfg)
    out = model(x.to(getattr(torch, dtype)).requires_grad_())
    out.float().sum().backward()
    expected = ref.transformer(cfg, state, x)
    return {
        "dtype": str(out.dtype),
        "param_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
        "max_error": (out.float() - expected).abs().max().item(),
        "scale": expected.abs().max().item(),
        "grads": all(p.grad is not None and p.grad.dtype == p.dtype for p in model.parameters()),
    }


def guards(rank: int, world: int) -> dict:
    """Misuse that must fail loudly, and uses that must keep working."""
    cfg = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=1,
               rotary=True, split="row", micro_batches=2)
    model = ov.DominoTransformer(ov.TransformerConfig(**cfg))
    facts = {}

    def message(fn):
        try:
            fn()
        except ValueError as e:
            return str(e)
        return ""

    bigger = ref.full_state({**cfg, "ffn_hidden_size": 2 * 4 * 48}, seed=1)
    facts["wrong_size_checkpoint"] = message(lambda: model.load_unsharded(bigger))
    facts["misspelled_name"] = message(
        lambda: model.shard_of("layers.0.attention.qkv.wieght", torch.zeros(1)))
    facts["assign"] = message(lambda: model.load_state_dict(model.state_dict(), assign=True))
    x = _input(cfg)
    with torch.inference_mode():
        model(x)
    model(x.requires_grad_()).sum().backward()  # the rotary cache built above must not break it
    facts["trains_after_inference"] = all(p.grad is not None for p in model.parameters())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(_input(cfg).requires_grad_())
    out.float().sum().backward()
    facts["autocast_output"] = str(out.dtype)
    facts["autocast_grads"] = sorted({str(p.grad.dtype) for p in model.parameters()})
    return facts


def gpu_numerics(rank: int, world: int, configs: list) -> list:
    """transformer_numerics with the model, inputs and reference on this rank's CUDA device
    (ranks may share one GPU: the domino backend then stages through host memory)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    results = []
    for cfg in configs:
        state = ref.full_state(cfg, seed=11)
        model = ov.DominoTransformer(ov.TransformerConfig(**cfg)).to(device)
        model.load_unsharded(state)
        gpu_state = {k: v.to(device) for k, v in state.items()}
        report = _compare(model, lambda s, x: ref.transformer(cfg, s, x), gpu_state,
                          _input(cfg).to(device))
        report["config"] = cfg
        results.append(report)
    return results


# bfloat16 keeps 8 bits of mantissa (relative step 2**-8 = 3.9e-3). Through two layers, the
# worst element of any output or gradient, relative to that tensor's largest value, measured
# 4.5e-2 on the CPU at TP 2 (a q/k/v bias gradient, a sum over every token); 8e-2 leaves room
# for other kernels' rounding, and an error of layout or communication is of order 1.
BF16_TOLERANCE = 8e-2


def numerics_bf16(rank: int, world: int, configs: list, device_type: str) -> list:
    """The layers in bfloat16 on this rank's CPU or CUDA device against the float32 reference
    (ranks may share one GPU)."""
    device = torch.device("cpu")
    if device_type == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for cfg in configs:
        state = ref.full_state(cfg, seed=11)
        model = ov.DominoTransformer(ov.TransformerConfig(**cfg)).to(device)
        model.load_unsharded(state)
        model.to(torch.bfloat16)
        gpu_state = {k: v.to(device) for k, v in state.items()}
        report = _compare(model, lambda s, x: ref.transformer(cfg, s, x), gpu_state,
                          _input(cfg).to(device), tol=BF16_TOLERANCE, floor=1e-12)
        report["config"] = cfg
        results.append(report)
    return results


def recompute_is_exact(rank: int, world: int, cfgs: list, device_type: str = "cpu") -> list:
    """torch.utils.checkpoint (reentrant and not) around a DominoTransformer and around a
    DominoTransformerLayer, dropout on, against the same step without it: whether the output and
    the input gradient are bit for bit the same, whether every parameter gradient is, and the
    largest parameter-gradient difference relative to the gradient's largest value. On CUDA the
    model and tensors sit on this rank's device (ranks may share one GPU)."""
    from torch.utils.checkpoint import checkpoint
    device = torch.device("cpu")
    if device_type == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    reports = []
    for cfg in cfgs:
        for target in ("DominoTransformer", "DominoTransformerLayer"):
            model = getattr(ov, target)(ov.TransformerConfig(**cfg)).to(device)
            model.train()
            x = _input(cfg).to(device)
            probe = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)).to(device)

            def step(mode, preserve=True):
                torch.manual_seed(7)
                model.zero_grad()
                xi = x.clone().requires_grad_()
                out = model(xi) if mode is None else checkpoint(
                    model, xi, use_reentrant=mode, preserve_rng_state=preserve)
                (out * probe).sum().backward()
                return [out.detach(), xi.grad] + [p.grad.clone() for p in model.parameters()]

            plain = step(None)
            repeatable = all(torch.equal(a, b) for a, b in zip(plain, step(None)))
            # Control: a recompute that does not get the generator back draws other masks.
            control = step(False, preserve=False)
            control_differs = not torch.equal(plain[1], control[1])
            for reentrant in (False, True):
                got = step(reentrant)
                worst = max((float((a - b).abs().max()) / max(float(a.abs().max()), 1e-30)
                             for a, b in zip(plain[2:], got[2:])), default=0.0)
                reports.append({"config": cfg, "target": target, "reentrant": reentrant,
                                "plain_repeatable": repeatable, "control_differs": control_differs,
                                "activations_exact": all(torch.equal(a, b)
                                                         for a, b in zip(plain[:2], got[:2])),
                                "exact": all(torch.equal(a, b) for a, b in zip(plain, got)),
                                "worst_grad": worst})
    return reports


def recompute_option_matches(rank: int, world: int, cfgs: list) -> list:
    """TransformerConfig(recompute=True) against the same model without it: output and every
    gradient, dropout on; reports whether each is bit for bit and the largest parameter-gradient
    difference relative to the gradient's largest value."""
    reports = []
    for cfg in cfgs:
        x = _input(cfg)
        probe = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))

        saved = {}

        def step(recompute):
            model = ov.DominoTransformer(ov.TransformerConfig(**cfg, recompute=recompute))
            model.train()
            torch.manual_seed(7)
            xi = x.clone().requires_grad_()
            total = [0]

            def pack(t):
                total[0] += t.numel() * t.element_size()
                return t
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                out = model(xi)
            saved[recompute] = total[0]
            (out * probe).sum().backward()
            return [out.detach(), xi.grad] + [p.grad.clone() for p in model.parameters()]

        plain, again, recomputed = step(False), step(False), step(True)
        worst = max(float((a - b).abs().max()) / max(float(a.abs().max()), 1e-30)
                    for a, b in zip(plain[2:], recomputed[2:]))
        reports.append({
            "config": cfg,
            "plain_repeatable": all(torch.equal(a, b) for a, b in zip(plain, again)),
            "activations_exact": all(torch.equal(a, b) for a, b in zip(plain[:2], recomputed[:2])),
            "exact": all(torch.equal(a, b) for a, b in zip(plain, recomputed)),
            "worst_grad": worst,
            "saved_fraction": saved[True] / saved[False],
        })
    return reports
