"""The Domino layers as ``torch.nn.Module``\\ s. Their parameters are the C++ module's own
tensors, registered under the same dotted names (submodules here are name holders), so
optimizers, DDP over a data-parallel group and ``state_dict`` work as for any module; the
checkpoint form of ``state_dict`` is ``checkpoint.py``'s."""

from __future__ import annotations

import weakref
from typing import Optional

import torch
import torch.distributed as dist
from torch import nn

from .. import _C
from . import checkpoint as ckpt
from .config import TransformerConfig

_impl = _C.overlap


def _group_or_world(group: Optional[dist.ProcessGroup]):
    if group is not None:
        return group
    if dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    return None  # one process, no group: tensor-parallel size 1


def register_parameters(module: nn.Module, impl, rename=None, holder=None) -> None:
    """Registers every parameter of the C++ module ``impl`` on ``module`` under its dotted name
    (``rename`` maps a C++ name to another), making name-holder submodules (``holder(path)``,
    path the holder's dotted name; default a bare nn.Module) for the dots, so optimizers update
    the C++ tensors themselves."""
    for name, tensor in impl.named_parameters():
        owner = module
        *path, leaf = (rename(name) if rename else name).split(".")
        for depth, part in enumerate(path):
            child = owner._modules.get(part)
            if child is None:
                child = holder(".".join(path[:depth + 1])) if holder else nn.Module()
                child._domino_part_of = type(module).__name__  # a name holder
                owner.add_module(part, child)
            owner = child
        # Marks the C++ tensor itself as a Parameter (nn.Parameter's documented flag), so
        # updates by an optimizer reach the C++ module without a copy.
        tensor._is_param = True
        owner.register_parameter(leaf, tensor)


class _CppModule(nn.Module):
    """An nn.Module whose parameters are those of a C++ Domino module, under the same names."""

    def __init__(self, impl, group: Optional[dist.ProcessGroup] = None) -> None:
        super().__init__()
        self._impl = impl
        self._tp_group = group
        self._tp_mesh = None
        register_parameters(self, impl)
        this = weakref.ref(self)  # the hooks live on our own submodules: no cycle through them
        self._layout = ckpt.ShardLayout(
            impl.shard_layouts(), tp_size=lambda: this()._tp_size(),
            tp_rank=lambda: this()._tp_rank(),
            as_dtensor=lambda piece, dim: this()._as_dtensor(piece, dim))
        ckpt.install(self, self._layout)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self._impl.forward(hidden)

    def train(self, mode: bool = True):
        """Sets train/eval on the whole C++ module (its submodules here are name holders only:
        call train/eval on this module, not on them)."""
        super().train(mode)
        self._impl.train(mode)
        return self

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        if assign:
            # assign=True would put new tensors in the Python tree while C++ keeps computing
            # with its own: refuse rather than train tensors the forward never reads.
            raise ValueError(f"{type(self).__name__}.load_state_dict: assign=True is not supported; "
                             "the parameters belong to the C++ module, load with assign=False "
                             "(values are copied in place)")
        return super().load_state_dict(state_dict, strict=strict)

    def shard_of(self, name: str, full: torch.Tensor) -> torch.Tensor:
        """This rank's slice of the unsharded tensor ``full`` of parameter ``name``."""
        return self._impl.shard_of(name, full.detach().cpu()).to(full.device)

    def load_unsharded(self, state: dict[str, torch.Tensor]) -> None:
        """Loads this rank's slices from an unsharded state dict (for example one trained at
        tensor-parallel size 1)."""
        self._impl.load_unsharded({k: v.detach().cpu() for k, v in state.items()})

    def _tp_size(self) -> int:
        group = self._tp_group
        return dist.get_world_size(group) if group is not None and dist.is_initialized() else 1

    def _tp_rank(self) -> int:
        group = self._tp_group
        return dist.get_rank(group) if group is not None and dist.is_initialized() else 0

    def _as_dtensor(self, piece: torch.Tensor, dim: int) -> torch.Tensor:
        """piece as this rank's Shard(dim) of a DTensor over the layer's group."""
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.tensor import DTensor, Shard
        if self._tp_mesh is None or self._tp_mesh.device_type != piece.device.type:
            self._tp_mesh = DeviceMesh.from_group(self._tp_group, piece.device.type)
        return DTensor.from_local(piece, self._tp_mesh, [Shard(dim)], run_check=False)

    def _drop_communication_for_benchmark(self, drop: bool = True) -> None:
        """Benchmark only: the same compute with every all-reduce removed (wrong results)."""
        self._impl._drop_communication_for_benchmark(drop)


class _ConfiguredModule(_CppModule):
    """Weights and dropout streams come from ``config.seed``: two standalone layers built from
    the same config start identical (give each its own seed, or use DominoTransformer, which
    draws all its layers from one stream)."""

    _cpp = None

    def __init__(self, config: TransformerConfig, group: Optional[dist.ProcessGroup] = None):
        self.config = config
        group = _group_or_world(group)
        super().__init__(type(self)._cpp(config, group), group)


class DominoTransformer(_ConfiguredModule):
    """``num_layers`` Domino layers and a final norm: ``[s, b, h] -> [s, b, h]``."""

    _cpp = _impl.DominoTransformer

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if not (self.config.recompute and self.training and torch.is_grad_enabled()):
            return self._impl.forward(hidden)
        from torch.utils.checkpoint import checkpoint
        # One dropout seed for the pass, handed to every layer and to its recompute.
        seed = self._impl.dropout_seed(hidden)
        for index in range(self.config.num_layers):
            hidden = checkpoint(self._impl.forward_layer, index, hidden, seed, use_reentrant=False)
        return self._impl.forward_final_norm(hidden)


class DominoTransformerLayer(_ConfiguredModule):
    """One pre-norm layer (attention, MLP) that overlaps its reductions inside itself."""

    _cpp = _impl.DominoTransformerLayer


class ColumnParallelLinear(_CppModule):
    """``Y = X A^T + b`` with ``A``'s output rows cut over the group: the input is replicated,
    the output holds this rank's ``out_features / tp`` columns. In backward the input-gradient
    all-reduce overlaps the weight-gradient GEMM. ``out_segments`` lists fused blocks that are
    each cut over the ranks (for example ``[q, k, v]``); the default is one block.
    ``segment_names`` name the blocks in checkpoints (``state_dict()``); unnamed blocks
    are stored as ``segment0``, ``segment1``, ... With ``sequence_parallel=True`` the input is
    this rank's rows of the sequence (``[s/tp, b, in]``), all-gathered before the GEMM, and the
    input gradient is reduce-scattered instead of all-reduced."""

    def __init__(self, in_features: int, out_features: int, group=None, bias: bool = True,
                 out_segments: Optional[list[int]] = None, seed: int = 1234,
                 init_std: float = 0.02, dtype: str = "float32",
                 segment_names: Optional[list[str]] = None, sequence_parallel: bool = False):
        segments = list(out_segments) if out_segments else [out_features]
        if sum(segments) != out_features:
            raise ValueError(f"ColumnParallelLinear: out_segments {segments} sum to "
                             f"{sum(segments)}, not out_features={out_features}")
        group = _group_or_world(group)
        super().__init__(_impl.ColumnParallelLinear(in_features, segments, group, bias, seed,
                                                    init_std, dtype, list(segment_names or []),
                                                    sequence_parallel),
                         group)


class RowParallelLinear(_CppModule):
    """``Y = sum_r X_r B_r^T + b``: the input holds this rank's ``in_features / tp`` columns, the
    output is all-reduced and replicated; the bias is added once, after the sum. With
    ``sequence_parallel=True`` the partial sums are reduce-scattered along the sequence instead:
    the output is this rank's rows, ``[s/tp, b, out]``, the bias added to them."""

    def __init__(self, in_features: int, out_features: int, group=None, bias: bool = True,
                 seed: int = 1234, init_std: float = 0.02, dtype: str = "float32",
                 sequence_parallel: bool = False):
        group = _group_or_world(group)
        super().__init__(_impl.RowParallelLinear(in_features, out_features, group, bias, seed,
                                                 init_std, dtype, sequence_parallel), group)


def _layer_class(name: str, doc: str) -> type:
    """The module of a layer type registered in C++ (``overlap/LayerTypes.h``), built by name."""

    def build(config: TransformerConfig, group):
        return _impl.build_layer(name, config, group)

    return type(name, (_ConfiguredModule,), {"__doc__": doc, "__module__": __name__,
                                             "__qualname__": name, "_cpp": staticmethod(build),
                                             "_layer_type": name})


# Every registered layer type (ShardedAttention, ParallelMLP, and any added), in registration
# order: each is a class of this module, and of torch_domino.overlap.
LAYER_TYPES = [name for name, _ in _impl.layer_types()]
_shadowed = [name for name in LAYER_TYPES
             if name in globals() and getattr(globals()[name], "_layer_type", None) != name]
if _shadowed:
    raise ImportError(f"torch_domino.overlap: registered layer types {_shadowed} take the names "
                      "of classes this module defines; register them under other names")
globals().update({name: _layer_class(name, doc) for name, doc in _impl.layer_types()})
