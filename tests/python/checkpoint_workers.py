"""Rank-side bodies of the checkpoint tests: Domino layers saved and loaded with
torch.distributed.checkpoint through torch_domino.overlap.sharded_state_dict, at one
tensor-parallel size and loaded at another, each rank comparing every parameter bit for bit with
its slice of the unsharded weights the test chose."""

from __future__ import annotations

import hashlib

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from torch_domino import overlap as ov

# GQA, SwiGLU (fused gate/up), biases (column-parallel sharded, row-parallel replicated), norms.
BASE = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=2,
            activation="swiglu", normalization="layernorm", bias=True, rotary=True)


def _model(overrides: dict) -> ov.DominoTransformer:
    return ov.DominoTransformer(ov.TransformerConfig(**{**BASE, **overrides}))


def _unsharded(model: ov.DominoTransformer, seed: int, tp: int | None = None) -> dict[str, torch.Tensor]:
    """Weights of the whole model, the same on every rank and at every tensor-parallel size."""
    if tp is None:
        tp = dist.get_world_size() if dist.is_initialized() else 1
    params = dict(model.named_parameters())
    full = {}
    for index, (name, dim, segments, _) in enumerate(model._impl.shard_layouts()):
        shape = list(params[name].shape)
        if dim >= 0:
            shape[dim] = sum(segments)
            assert params[name].shape[dim] * tp == shape[dim]
        generator = torch.Generator().manual_seed(seed * 1000 + index)
        full[name] = torch.randn(shape, generator=generator).to(params[name].dtype)
    return full


def save(rank: int, world: int, path: str, overrides: dict, seed: int) -> dict:
    model = _model(overrides)
    model.load_unsharded(_unsharded(model, seed))
    state = ov.sharded_state_dict(model)
    dcp.save(state, checkpoint_id=path)
    sharded = sorted(k for k, v in state.items() if type(v).__name__ == "DTensor")
    return {"keys": sorted(state), "sharded": sharded}


def load(rank: int, world: int, path: str, overrides: dict, seed: int) -> dict:
    model = _model({**overrides, "seed": 99})  # other initial weights: the load must replace them
    full = _unsharded(model, seed)
    state = ov.sharded_state_dict(model)
    dcp.load(state, checkpoint_id=path)
    wrong = [name for name, param in model.named_parameters()
             if not torch.equal(param.detach(), model.shard_of(name, full[name]))]
    # The loaded model computes: a forward pass runs on the weights it now holds.
    x = torch.randn(4, 2, BASE["hidden_size"], generator=torch.Generator().manual_seed(5))
    finite = bool(torch.isfinite(model(x)).all())
    return {"wrong": wrong, "checked": len(list(model.parameters())), "finite": finite,
            "keys": sorted(state)}


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.detach().contiguous().cpu().numpy().tobytes()).hexdigest()[:16]


def _training_state(model, optimizer) -> dict:
    """Every parameter and optimizer state tensor of this rank, as digests of their bits."""
    out = {}
    for name, p in model.named_parameters():
        out[name] = _digest(p)
        for key, value in optimizer.state[p].items():
            if torch.is_tensor(value):
                out[f"{name}:{key}"] = _digest(value)
    return out


def _steps(model, optimizer, steps: int) -> None:
    for step in range(steps):
        x = torch.randn(4, 2, BASE["hidden_size"], generator=torch.Generator().manual_seed(step))
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()


def train_and_save(rank: int, world: int, path: str, seed: int, steps: int) -> dict:
    model = _model({})
    model.load_unsharded(_unsharded(model, seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    _steps(model, optimizer, steps)
    dcp.save({"model": ov.sharded_state_dict(model),
              "optim": ov.sharded_optimizer_state_dict(model, optimizer)}, checkpoint_id=path)
    return _training_state(model, optimizer)


def load_and_save(rank: int, world: int, path: str, again: str | None, overrides: dict) -> dict:
    """Loads model and AdamW state at this world's tensor-parallel size (a fresh optimizer with
    another learning rate), optionally saves them again at this size; reports them."""
    model = _model({**overrides, "seed": 99})
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5, weight_decay=0.0)
    state = {"model": ov.sharded_state_dict(model),
             "optim": ov.sharded_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=path)
    ov.set_sharded_optimizer_state_dict(model, optimizer, state["optim"])
    if again:
        dcp.save({"model": ov.sharded_state_dict(model),
                  "optim": ov.sharded_optimizer_state_dict(model, optimizer)}, checkpoint_id=again)
    group = optimizer.param_groups[0]
    steps = sorted({float(optimizer.state[p]["step"]) for p in model.parameters()})
    report = {"state": _training_state(model, optimizer), "lr": group["lr"],
              "weight_decay": group["weight_decay"], "steps": steps}
    _steps(model, optimizer, 1)  # it trains on from there
    report["finite"] = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    return report


class UserModel(torch.nn.Module):
    """A trainer's model: its own layers and a buffer around a DominoTransformer."""

    def __init__(self, group):
        super().__init__()
        self.embed = torch.nn.Linear(8, BASE["hidden_size"])
        self.register_buffer("scale", torch.tensor(1.0))
        self.body = ov.DominoTransformer(ov.TransformerConfig(**BASE), group=group)


def save_data_and_tensor_parallel(rank: int, world: int, path: str, seed: int) -> dict:
    """World 4 as 2 data-parallel replicas of tensor-parallel pairs {0, 1} and {2, 3}."""
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    model = UserModel(groups[rank // 2])
    model.body.load_unsharded(_unsharded(model.body, seed, tp=2))
    torch.manual_seed(seed)
    with torch.no_grad():
        model.embed.weight.copy_(torch.randn(model.embed.weight.shape))
        model.embed.bias.copy_(torch.randn(model.embed.bias.shape))
        model.scale.fill_(3.5)
    dcp.save(ov.sharded_state_dict(model), checkpoint_id=path)
    return sorted(ov.sharded_state_dict(model))


def load_user_model(rank: int, world: int, path: str, seed: int) -> dict:
    model = UserModel(None if world == 1 else dist.group.WORLD)
    state = ov.sharded_state_dict(model)
    dcp.load(state, checkpoint_id=path)
    full = _unsharded(model.body, seed)
    torch.manual_seed(seed)
    want_weight, want_bias = torch.randn(model.embed.weight.shape), torch.randn(model.embed.bias.shape)
    wrong = [name for name, param in model.body.named_parameters()
             if not torch.equal(param.detach(), model.body.shard_of(name, full[name]))]
    if not torch.equal(model.embed.weight.detach(), want_weight):
        wrong.append("embed.weight")
    if not torch.equal(model.embed.bias.detach(), want_bias):
        wrong.append("embed.bias")
    if float(model.scale) != 3.5:
        wrong.append("scale")
    return {"wrong": wrong, "keys": sorted(state)}


def refusals(rank: int, world: int) -> dict:
    """sharded_state_dict on what cannot be saved as one model: a Domino layer's name holder,
    and a Domino weight tied under a second name."""
    model = ov.DominoTransformer(ov.TransformerConfig(**BASE))
    out = {}
    try:
        ov.sharded_state_dict(model.layers)
        out["part"] = ""
    except ValueError as e:
        out["part"] = str(e)

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = model
            self.head = torch.nn.Linear(1, 1)
            self.head.weight = getattr(model.layers, "0").mlp.fc2.weight

    try:
        ov.sharded_state_dict(Tied())
        out["tied"] = ""
    except ValueError as e:
        out["tied"] = str(e)
    return out
