"""How a Domino layer's weights appear in ``state_dict()`` and load back.

A tensor-parallel rank holds a slice of each sharded weight. A plain tensor per rank under one
key is what ``torch.distributed.checkpoint`` (DCP) takes for a replicated one: it would keep one
rank's slice and load it everywhere. So ``state_dict()`` gives, as torchtitan's DTensor models do:

- every sharded weight as a DTensor over the layer's group (``Shard(0)`` for column-parallel
  rows, ``Shard(1)`` for row-parallel columns), sharing memory with the parameter;
- each block of a fused weight (q, k and v of ``attention.qkv``; gate and up of SwiGLU's
  ``mlp.fc1``) as an entry of its own (``attention.qkv.q.weight``): a rank's ``[q_r; k_r; v_r]``
  is no single slice of ``[q; k; v]``;
- replicated tensors (norms, row-parallel biases) as plain tensors.

The keys are the same at every tensor-parallel size, so DCP reshards. ``load_state_dict`` takes
that form, whole blocks (``get_model_state_dict(..., full_state_dict=True)``), or this rank's
plain slices under the parameters' own names (per-rank files of earlier releases).
``get_model_state_dict(..., options=StateDictOptions(ignore_frozen_params=True))`` leaves out each
frozen parameter's entries (a fused weight's blocks included), parameter by parameter.

Optimizers: the first step of any optimizer over Domino parameters gives it hooks (through a
global step pre-hook) that write their state tensors in the same form: a DTensor, or a dict of
blocks for a fused weight. ``get_optimizer_state_dict`` steps a fresh optimizer once before it
reads it, so that path and ``set_optimizer_state_dict`` carry the whole, reshardable state.
"""

from __future__ import annotations

import sys
import weakref
from typing import Callable

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils.weak import WeakIdKeyDictionary


class FusedBlock(nn.Module):
    """A block of a fused weight as checkpoints name it (``attention.qkv.q``), holding an empty
    buffer per fused parameter of its holder (``weight``, ``bias``). It holds no data: it lets
    torch's state-dict helpers find the key ``attention.qkv.q.weight`` among the model's state
    (``get_model_state_dict`` walks to it, ``set_model_state_dict(broadcast_from_rank0=True)``
    delivers rank 0's block to it), and the holder's hooks write and read the block itself."""

    def add(self, leaf: str, like: torch.Tensor) -> None:
        self.register_buffer(leaf, like.detach().new_empty(0))

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        pass  # the holder's hook writes the block under these keys

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        pass  # the holder's hook has read the block


def _is_dtensor(value) -> bool:
    return type(value).__name__ == "DTensor"


class ShardLayout:
    """How a Domino layer's parameters are cut: per parameter (its name in the layer), the dim
    it is sharded along (-1: replicated) and its fused blocks' whole sizes and names."""

    def __init__(self, layouts, tp_size: Callable[[], int], tp_rank: Callable[[], int],
                 as_dtensor: Callable[[torch.Tensor, int], torch.Tensor]):
        self.params = {}
        for name, dim, segments, names in layouts:
            segments = list(segments)
            names = list(names) or [f"segment{i}" for i in range(len(segments))]
            self.params[name] = (dim, segments, names if len(segments) > 1 else [])
        self.tp_size, self.tp_rank, self.as_dtensor = tp_size, tp_rank, as_dtensor

    def whole_shape(self, name: str, local: torch.Tensor) -> tuple:
        """The shape parameter ``name`` has whole, from this rank's tensor of it."""
        dim, segments, _ = self.params[name]
        shape = list(local.shape)
        if dim >= 0:
            shape[dim] = sum(segments)
        return tuple(shape)

    def blocks(self, name: str) -> list[str]:
        """The fused blocks' names of parameter ``name`` (q, k, v), or [] if it is one block."""
        return self.params[name][2] if self.params[name][0] >= 0 else []

    def block_key(self, name: str, block: str) -> str:
        owner, _, leaf = name.rpartition(".")
        return ".".join(p for p in (owner, block, leaf) if p)

    def pieces(self, name: str, local: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
        """(block, view of local) per fused block of parameter ``name``; local is shaped like
        this rank's parameter."""
        dim, segments, _ = self.params[name]
        tp, offset, out = self.tp_size(), 0, []
        for block, segment in zip(self.blocks(name), segments):
            out.append((block, local.narrow(dim, offset, segment // tp)))
            offset += segment // tp
        return out

    def entry(self, name: str, local: torch.Tensor):
        """A tensor shaped like this rank's parameter ``name`` (the parameter, or an optimizer's
        state of it) as checkpoints hold it: a DTensor when sharded over more than one rank, a
        dict of those per block when fused, the tensor itself when replicated."""
        dim = self.params[name][0]
        shard = (lambda t: self.as_dtensor(t, dim)) if dim >= 0 and self.tp_size() > 1 else (
            lambda t: t)
        if self.blocks(name):
            return {block: shard(piece) for block, piece in self.pieces(name, local)}
        return shard(local)

    def local(self, name: str, value, like: torch.Tensor, what: str, key: str) -> torch.Tensor:
        """This rank's tensor of parameter ``name`` (shaped like ``like``) from a checkpoint's
        value: a dict of blocks or, for a parameter of one block, a DTensor or a whole tensor;
        this rank's own slice (a per-rank file) is taken as it is."""
        dim, segments, _ = self.params[name]
        if isinstance(value, dict):
            if not self.blocks(name):
                raise ValueError(f"{what}: '{key}' holds blocks {sorted(value)}, but it is not a "
                                 "fused weight")
            absent = [b for b in self.blocks(name) if b not in value]
            if absent:
                raise ValueError(f"{what}: '{key}' lacks the blocks {absent} of its fused weight")
            parts = [self._piece(value[block], dim, segment, tuple(piece.shape), what,
                                 f"{key} block {block}")
                     for (block, piece), segment in zip(self.pieces(name, like), segments)]
            return torch.cat(parts, dim)
        if self.blocks(name) and not (torch.is_tensor(value) and not _is_dtensor(value)
                                      and tuple(value.shape) == tuple(like.shape)):
            raise ValueError(
                f"{what}: '{key}' is a fused weight ({', '.join(self.blocks(name))}); give its "
                "blocks as a checkpoint does, or this rank's own slice of shape "
                f"{tuple(like.shape)}")
        return self._piece(value, dim, segments[0] if dim >= 0 else 0, tuple(like.shape), what,
                           key)

    def _piece(self, value, dim: int, whole: int, local_shape: tuple, what: str,
               key: str) -> torch.Tensor:
        if not torch.is_tensor(value):
            raise ValueError(f"{what}: '{key}' holds a {type(value).__name__}, not a tensor")
        if _is_dtensor(value):
            mine = tuple(value.to_local().shape) == local_shape and all(
                p.is_shard(dim) for p in value.placements) and (
                value.device_mesh.size() == self.tp_size())
            value = value.to_local() if mine else value.full_tensor()
        if tuple(value.shape) == local_shape:
            return value
        whole_shape = list(local_shape)
        if dim >= 0:
            whole_shape[dim] = whole
            if tuple(value.shape) == tuple(whole_shape):
                share = whole // self.tp_size()
                return value.narrow(dim, self.tp_rank() * share, share)
        raise ValueError(
            f"{what}: '{key}' has shape {tuple(value.shape)}, but tensor-parallel rank "
            f"{self.tp_rank()} of {self.tp_size()} holds {local_shape}"
            + (f" of a whole {tuple(whole_shape)}" if dim >= 0 and self.tp_size() > 1 else "")
            + ". Load a checkpoint of this model's configuration, or save and load it through "
            "torch.distributed.checkpoint, which reshards")


def install(layer: nn.Module, layout: ShardLayout) -> None:
    """Gives every module of the Domino layer ``layer`` that holds its parameters (the layer and
    its name holders) hooks that write and read them in checkpoint form, whatever module
    ``state_dict`` is called on, and the FusedBlock names torch's state-dict helpers walk."""
    holders: dict[str, list[tuple[str, str]]] = {}  # holder's path -> (leaf, name in layer)
    for name in layout.params:
        path, _, leaf = name.rpartition(".")
        holders.setdefault(path, []).append((leaf, name))
    what = f"{type(layer).__name__}.load_state_dict"
    for path, owned in holders.items():
        holder = layer.get_submodule(path) if path else layer
        for leaf, name in owned:
            for block in layout.blocks(name):
                if block not in holder._modules:
                    holder.add_module(block, FusedBlock())
                holder._modules[block].add(leaf, holder._parameters[leaf])
        holder.register_state_dict_post_hook(_saver(owned, layout))
        holder.register_load_state_dict_pre_hook(_loader(owned, layout, what))
    for name, param in layer.named_parameters():
        _LAYOUT_OF[param] = (layout, name)


def _saver(owned, layout: ShardLayout):
    def hook(module, state_dict, prefix, local_metadata):
        frozen = {leaf for leaf, _ in owned if not module._parameters[leaf].requires_grad}
        if frozen and not _torch_drops_frozen_by_own_names():
            frozen = set()
        for leaf, name in owned:
            if leaf in frozen:
                continue  # left as it is, under its own name, for torch to drop
            local = state_dict.pop(prefix + leaf, None)
            if local is None:
                continue
            entry = layout.entry(name, local)
            if isinstance(entry, dict):
                for block, tensor in entry.items():
                    state_dict[f"{prefix}{block}.{leaf}"] = tensor
            else:
                state_dict[prefix + leaf] = entry
    return hook


def _loader(owned, layout: ShardLayout, what: str):
    def hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
             unexpected_keys, error_msgs):
        for leaf, name in owned:
            keys = {block: f"{prefix}{block}.{leaf}" for block in layout.blocks(name)}
            given = {block: state_dict.pop(key) for block, key in keys.items() if key in state_dict}
            # set_model_state_dict(full_state_dict=True) fills the keys its dict lacks (a frozen
            # weight's blocks, left out) with the model's own values: a block's empty buffer.
            given = {block: value for block, value in given.items()
                     if value is not module._modules[block]._buffers[leaf]}
            if given:
                state_dict.pop(prefix + leaf, None)  # set_model_state_dict's current value
                value = given
            elif prefix + leaf in state_dict:
                value = state_dict[prefix + leaf]
            else:
                continue  # load_state_dict reports it missing
            try:
                state_dict[prefix + leaf] = layout.local(
                    name, value, module._parameters[leaf].detach(), what, prefix + leaf)
            except ValueError as error:
                state_dict.pop(prefix + leaf, None)
                error_msgs.append(str(error))
    return hook


# --- torch's state-dict helpers ---------------------------------------------------------

def _torch_drops_frozen_by_own_names() -> bool:
    """Whether this ``state_dict()`` runs inside torch's ``get_model_state_dict`` (or
    ``get_state_dict``) with ``ignore_frozen_params``. torch then drops each frozen parameter
    from what ``state_dict()`` gave by the parameter's own name (``attention.qkv.weight``), so a
    frozen fused weight must stay under that name, not as blocks. Read off torch's frame, not by
    replacing its function: that would import torch.distributed.checkpoint (0.7 s) with every
    ``import torch_domino``. Should torch rename it, this finds nothing and torch raises a
    ``KeyError`` as before; no checkpoint is written wrong."""
    frame = sys._getframe(1)
    while frame is not None:
        if (frame.f_code.co_name == "_get_model_state_dict" and
                frame.f_globals.get("__name__") == "torch.distributed.checkpoint.state_dict"):
            return bool(getattr(frame.f_locals.get("info"), "ignore_frozen_params", False))
        frame = frame.f_back
    return False


# --- optimizers ---------------------------------------------------------------------------

# Every Domino parameter -> its layer's ShardLayout and its name there.
_LAYOUT_OF = WeakIdKeyDictionary()
# Optimizers seen by the step pre-hook -> how many parameters they had then.
_SEEN = WeakIdKeyDictionary()


def _params_and_ids(optimizer, state_dict: dict):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    ids = [i for group in state_dict["param_groups"] for i in group["params"]]
    return zip(params, ids)


def _optimizer_state_out(optimizer, state_dict: dict) -> dict:
    state = dict(state_dict["state"])  # the values are the optimizer's own dicts: never edit them
    for param, pid in _params_and_ids(optimizer, state_dict):
        owner = _LAYOUT_OF.get(param)
        if owner is None or pid not in state:
            continue
        layout, name = owner
        state[pid] = {key: _state_entry(layout, name, param, value)
                      for key, value in state[pid].items()}
    return {**state_dict, "state": state}


def _state_entry(layout: ShardLayout, name: str, param, value):
    """An optimizer's state tensor of a Domino weight as checkpoints hold it: shaped like the
    weight, cut like it; of another shape (Adafactor's factored moments, partial over the
    weight's cut), every rank's own as a [group size, ...] DTensor, which DCP keeps whole and
    loads back at this tensor-parallel size only; scalars as they are."""
    if not torch.is_tensor(value) or _is_dtensor(value) or value.dim() == 0:
        return value
    if tuple(value.shape) == tuple(param.shape):
        return layout.entry(name, value)
    if layout.tp_size() > 1 and layout.params[name][0] >= 0:
        return layout.as_dtensor(value.unsqueeze(0), 0)
    return value


def _optimizer_state_in(optimizer, state_dict: dict) -> dict:
    what = f"{type(optimizer).__name__}.load_state_dict"
    state = dict(state_dict["state"])
    for param, pid in _params_and_ids(optimizer, state_dict):
        owner = _LAYOUT_OF.get(param)
        if owner is None or pid not in state:
            continue
        layout, name = owner
        values = dict(state[pid])
        for key, value in values.items():
            # Blocks, DTensors and whole tensors are the checkpoint's forms; a tensor shaped like
            # this rank's parameter is already this rank's; other shapes (Adafactor's factored
            # moments) are the optimizer's own business.
            if _is_dtensor(value) and value.dim() == param.dim() + 1:
                # Every rank's own state of another shape (_state_entry): this rank's, at the
                # tensor-parallel size it was saved at.
                if value.device_mesh.size() != layout.tp_size():
                    raise ValueError(
                        f"{what}: the state '{key}' of '{name}' was saved at tensor-parallel "
                        f"size {value.device_mesh.size()} and is not shaped like the weight "
                        f"(Adafactor's factored moments); it loads at that size only, not at "
                        f"{layout.tp_size()}")
                values[key] = value.to_local()[0].clone()
                continue
            plain = torch.is_tensor(value) and not _is_dtensor(value)
            if plain and (tuple(value.shape) == tuple(param.shape) or
                          tuple(value.shape) != layout.whole_shape(name, param)):
                continue
            if isinstance(value, dict) or torch.is_tensor(value):
                # A copy: a slice of a whole tensor would keep the whole one alive.
                values[key] = layout.local(name, value, param.detach(), what,
                                           f"state of '{name}', '{key}'").clone()
        state[pid] = values
    return {**state_dict, "state": state}


def hook_optimizer(optimizer, args=(), kwargs=None) -> None:
    """Gives an optimizer over Domino parameters the state-dict hooks, once. Runs as a global
    step pre-hook; call it yourself to ``load_state_dict`` checkpoint-form state into an
    optimizer that has not stepped (``set_optimizer_state_dict`` needs no call: it steps)."""
    count = sum(len(group["params"]) for group in optimizer.param_groups)
    seen = _SEEN.get(optimizer)
    if seen is not None and (seen < 0 or seen == count):
        return  # hooked (-1), or no new parameters since it was found to hold no Domino ones
    if any(p in _LAYOUT_OF for group in optimizer.param_groups for p in group["params"]):
        optimizer.register_state_dict_post_hook(_optimizer_state_out)
        optimizer.register_load_state_dict_pre_hook(_optimizer_state_in)
        _SEEN[optimizer] = -1
    else:
        _SEEN[optimizer] = count


_STEP_HOOK = register_optimizer_step_pre_hook(hook_optimizer)


# --- named entry points -------------------------------------------------------------------

def _is_domino_layer(module: nn.Module) -> bool:
    return isinstance(getattr(module, "_layout", None), ShardLayout)


def sharded_state_dict(model: nn.Module) -> dict:
    """``model.state_dict()``, which is already what DCP saves and reshards, after a check that
    a plain ``state_dict()`` cannot make: that no Domino weight is reached under a second name
    (a weight tied into a module of another kind), whose entry there would be one rank's slice.
    Kept for code written against releases where ``state_dict()`` gave plain slices::

        dcp.save(model.state_dict(), checkpoint_id=path)  # the same keys and values
    """
    owners = {}  # storage of every Domino parameter -> its name in model
    for prefix, module in model.named_modules():
        if _is_domino_layer(module):
            head = prefix + "." if prefix else ""
            for name, param in module.named_parameters():
                owners[param.untyped_storage().data_ptr()] = head + name
    state = model.state_dict()
    for key, value in state.items():
        if torch.is_tensor(value) and not _is_dtensor(value) and value.numel() > 0:
            owner = owners.get(value.untyped_storage().data_ptr())
            holder, _, leaf = owner.rpartition(".") if owner is not None else ("", "", "")
            # Its own key, or one of its blocks' (holder.block.leaf).
            own = owner is None or key == owner or (
                key.endswith("." + leaf) and key.startswith(holder + "." if holder else "")
                and key[len(holder) + bool(holder):-len(leaf) - 1].count(".") == 0)
            if not own:
                raise ValueError(
                    f"sharded_state_dict: '{key}' is the Domino parameter '{owner}' under another "
                    "name, which would save one rank's shard for every rank; untie it or call "
                    "sharded_state_dict on a module that holds the whole Domino layer")
    return state
