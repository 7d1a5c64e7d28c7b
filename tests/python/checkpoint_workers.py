"""Rank-side bodies of the checkpoint tests: Domino layers saved and loaded the way every PyTorch
trainer does it, ``dcp.save(model.state_dict())`` and the ``torch.distributed.checkpoint.state_dict``
helpers, at one tensor-parallel size and loaded at another, each rank comparing every parameter
bit for bit with its slice of the unsharded weights the test chose."""

from __future__ import annotations

import hashlib

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_state_dict, set_model_state_dict,
                                                     set_state_dict)

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
    state = model.state_dict()
    dcp.save(state, checkpoint_id=path)
    sharded = sorted(k for k, v in state.items() if type(v).__name__ == "DTensor")
    return {"keys": sorted(state), "sharded": sharded}


def _wrong(model, full) -> list[str]:
    return [name for name, param in model.named_parameters()
            if not torch.equal(param.detach(), model.shard_of(name, full[name]))]


def _computes(model) -> bool:
    """The loaded model computes: a forward pass runs on the weights it now holds."""
    x = torch.randn(4, 2, BASE["hidden_size"], generator=torch.Generator().manual_seed(5))
    return bool(torch.isfinite(model(x)).all())


def load(rank: int, world: int, path: str, overrides: dict, seed: int) -> dict:
    """The documented round trip: dcp.load into state_dict(), then load_state_dict."""
    model = _model({**overrides, "seed": 99})  # other initial weights: the load must replace them
    full = _unsharded(model, seed)
    state = model.state_dict()
    dcp.load(state, checkpoint_id=path)
    model.load_state_dict(state)
    return {"wrong": _wrong(model, full), "checked": len(list(model.parameters())),
            "finite": _computes(model), "keys": sorted(state)}


def load_with_helpers(rank: int, world: int, path: str, overrides: dict, seed: int) -> dict:
    """get_model_state_dict / dcp.load / set_model_state_dict (torchtitan's way), then the whole
    model gathered by get_model_state_dict(full_state_dict=True) and loaded back from it."""
    model = _model({**overrides, "seed": 99})
    full = _unsharded(model, seed)
    state = get_model_state_dict(model)
    dcp.load(state, checkpoint_id=path)
    set_model_state_dict(model, state)
    wrong = _wrong(model, full)
    whole = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    other = _model({**overrides, "seed": 98})
    set_model_state_dict(other, whole, options=StateDictOptions(full_state_dict=True))
    wrong += [f"full_state_dict: {n}" for n in _wrong(other, full)]
    # torchtitan's way to load a whole checkpoint: rank 0 holds it, the others get theirs.
    third = _model({**overrides, "seed": 97})
    set_model_state_dict(third, whole if rank == 0 else {},
                         options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    wrong += [f"broadcast_from_rank0: {n}" for n in _wrong(third, full)]
    return {"wrong": wrong, "checked": len(list(model.parameters())),
            "finite": _computes(model), "keys": sorted(state)}


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
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=path)
    return _training_state(model, optimizer)


def load_and_save(rank: int, world: int, path: str, again: str | None, overrides: dict) -> dict:
    """Loads model and AdamW state at this world's tensor-parallel size (a fresh optimizer with
    another learning rate), optionally saves them again at this size; reports them."""
    model = _model({**overrides, "seed": 99})
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5, weight_decay=0.0)
    model_state, optim_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optim": optim_state}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    if again:
        model_state, optim_state = get_state_dict(model, optimizer)
        dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=again)
    group = optimizer.param_groups[0]
    steps = sorted({float(optimizer.state[p]["step"]) for p in model.parameters()})
    report = {"state": _training_state(model, optimizer), "lr": group["lr"],
              "weight_decay": group["weight_decay"], "steps": steps}
    _steps(model, optimizer, 1)  # it trains on from there
    report["finite"] = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    return report


def legacy_save(rank: int, world: int, folder: str, seed: int) -> dict:
    """A per-rank torch.save as releases before DTensor state dicts wrote it: the model's and
    AdamW's plain tensors, this rank's slices, under the parameters' names and ids."""
    model = _model({})
    model.load_unsharded(_unsharded(model, seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    _steps(model, optimizer, 2)
    params = list(model.parameters())
    legacy = {
        "model": {name: p.detach().clone() for name, p in model.named_parameters()},
        "optim": {"state": {i: {k: v.clone() for k, v in optimizer.state[p].items()}
                            for i, p in enumerate(params)},
                  "param_groups": [{**{k: v for k, v in g.items() if k != "params"},
                                    "params": list(range(len(params)))}
                                   for g in optimizer.param_groups]}}
    torch.save(legacy, f"{folder}/rank{rank}.pt")
    return _training_state(model, optimizer)


def factored_optimizer(rank: int, world: int) -> dict:
    """An optimizer whose state is not shaped like the weights (Adafactor's factored second
    moments) saves and reloads its own state."""
    model = _model({})
    optimizer = torch.optim.Adafactor(model.parameters(), lr=1e-2)
    _steps(model, optimizer, 2)
    before = _training_state(model, optimizer)
    optimizer.load_state_dict(optimizer.state_dict())
    return {"same": _training_state(model, optimizer) == before}


def legacy_load(rank: int, world: int, folder: str) -> dict:
    model = _model({"seed": 99})
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.5)
    _steps(model, optimizer, 1)  # a stepped optimizer: it has the checkpoint hooks
    legacy = torch.load(f"{folder}/rank{rank}.pt")
    model.load_state_dict(legacy["model"])
    optimizer.load_state_dict(legacy["optim"])
    return _training_state(model, optimizer)


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
    dcp.save(model.state_dict(), checkpoint_id=path)
    return sorted(model.state_dict())


def load_user_model(rank: int, world: int, path: str, seed: int) -> dict:
    model = UserModel(None if world == 1 else dist.group.WORLD)
    state = model.state_dict()
    dcp.load(state, checkpoint_id=path)
    model.load_state_dict(state)
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
    """A name holder's own state_dict is in checkpoint form too; sharded_state_dict refuses a
    Domino weight tied under a second name; load_state_dict names a wrong shape."""
    model = ov.DominoTransformer(ov.TransformerConfig(**BASE))
    out = {"holder": {k: type(v).__name__ for k, v in model.layers.state_dict().items()}}

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
    state = model.state_dict()
    state["layers.1.mlp.fc2.weight"] = torch.zeros(3, 3)
    try:
        model.load_state_dict(state)
        out["shape"] = ""
    except RuntimeError as e:
        out["shape"] = str(e)
    return out


def _freeze(model, frozen: list[str]) -> dict[str, torch.Tensor]:
    """Freezes the parameters named; returns copies of their values now."""
    params = dict(model.named_parameters())
    for name in frozen:
        params[name].requires_grad_(False)
    return {name: params[name].detach().clone() for name in frozen}


def _trainable_loaded_frozen_kept(model, full, before: dict[str, torch.Tensor]) -> list[str]:
    """Trainable parameters must hold their slice of ``full`` bit for bit, frozen ones the values
    they had (which must differ from ``full``'s, or the check would tell nothing)."""
    wrong = []
    for name, param in model.named_parameters():
        saved = model.shard_of(name, full[name])
        if name not in before:
            if not torch.equal(param.detach(), saved):
                wrong.append(name)
        elif not torch.equal(param.detach(), before[name]):
            wrong.append(f"frozen {name} changed")
        elif torch.equal(before[name], saved):
            wrong.append(f"frozen {name} already held the saved value")
    return wrong


def save_without_frozen(rank: int, world: int, path: str, frozen: list[str], seed: int) -> dict:
    """get_model_state_dict(ignore_frozen_params=True), sharded and whole; the sharded one
    dcp.saved, the whole one loaded into fresh models (as it is, and broadcast from rank 0)."""
    model = _model({})
    full = _unsharded(model, seed)
    model.load_unsharded(full)
    _freeze(model, frozen)
    state = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True))
    whole = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True,
                                                                 full_state_dict=True))
    dcp.save(state, checkpoint_id=path)
    wrong = []
    for how, seed_of_fresh in (("full_state_dict", 98), ("broadcast_from_rank0", 97)):
        fresh = _model({"seed": seed_of_fresh})
        before = _freeze(fresh, frozen)
        broadcast = how == "broadcast_from_rank0"
        # A copy: set_model_state_dict fills the dict it is given with the model's own values.
        set_model_state_dict(fresh, {} if broadcast and rank != 0 else dict(whole),
                             options=StateDictOptions(full_state_dict=True, strict=False,
                                                      broadcast_from_rank0=broadcast))
        wrong += [f"{how}: {n}" for n in _trainable_loaded_frozen_kept(fresh, full, before)]
    return {"keys": sorted(state), "whole_keys": sorted(whole),
            "every_key": sorted(model.state_dict()), "wrong": wrong}


def load_without_frozen(rank: int, world: int, path: str, frozen: list[str], seed: int) -> dict:
    """A fresh model with the same parameters frozen loads the checkpoint of the trainable ones
    (strict=False: the frozen ones are missing, as torch requires for a partial dict)."""
    model = _model({"seed": 99})
    full = _unsharded(model, seed)
    before = _freeze(model, frozen)
    state = get_model_state_dict(model, options=StateDictOptions(ignore_frozen_params=True))
    dcp.load(state, checkpoint_id=path)
    result = set_model_state_dict(model, state, options=StateDictOptions(strict=False))
    return {"wrong": _trainable_loaded_frozen_kept(model, full, before),
            "missing": sorted(result.missing_keys), "unexpected": sorted(result.unexpected_keys),
            "keys": sorted(state), "finite": _computes(model)}
