"""Domino tensor-parallel layers (arXiv 2409.15241), implemented in C++ (``overlap/``).

Each layer shards its weights over a tensor-parallel process group (any c10d group: gloo, nccl,
domino) and hides its all-reduces behind compute: the batch is cut into micro-batches
(``split="row"``), the row-parallel outputs into column chunks (``split="column"``), or both
(``split="2d"``), and the reduction of one slice runs while the next computes. On a domino group
the reductions use the high-priority lane. Layout is ``[s, b, h]``, as in Megatron.

The classes here are ordinary ``torch.nn.Module``\\ s: their parameters are the C++ module's own
tensors, registered under the same dotted names, so optimizers, ``state_dict`` and DDP over a
data-parallel group work unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import torch
import torch.distributed as dist
from torch import nn

from . import _C

__all__ = [
    "TransformerConfig",
    "DominoTransformer",
    "DominoTransformerLayer",
    "ShardedAttention",
    "ParallelMLP",
    "ColumnParallelLinear",
    "RowParallelLinear",
    "sharded_state_dict",
    "sharded_optimizer_state_dict",
    "set_sharded_optimizer_state_dict",
    "from_hf",
    "to_hf_state_dict",
]

_impl = _C.overlap


@dataclasses.dataclass
class TransformerConfig:
    """The shape and schedule of a Domino transformer (the same fields as the C++ struct).

    ``activation``: ``"gelu"`` (exact), ``"gelu_tanh"`` (GPT-2's) or ``"swiglu"``.
    ``split``: ``"row"`` (micro-batches), ``"column"`` (column chunks of the row-parallel
    outputs; the hidden state stays in those column parts, and the next norm and GEMM start on
    each part as soon as it is summed), ``"2d"`` (both) or ``"none"`` (the Megatron-style
    baseline: nothing cut, every all-reduce waited at once). ``overlap``: ``"intra"`` hides reductions inside each layer,
    ``"inter"`` also lets the last micro-batch's MLP reduction run under the next layer's
    attention. ``qkv_bias`` (``None``: as ``bias``) sets the q/k/v projection's bias alone, as
    Qwen2 has it. ``micro_batches`` and ``overlap`` left as ``None`` follow the split: 2 and
    ``"inter"`` for row and 2d, 1 and ``"inter"`` for column, 1 and ``"intra"`` for none.
    ``num_query_groups`` 0 means no GQA; ``ffn_hidden_size`` 0 means 4h (gelu) or 8h/3 rounded
    up to 64 (swiglu). ``recompute=True`` (``DominoTransformer`` in training) keeps only each
    layer's input and recomputes the layer in backward, Megatron-style, with the same dropout
    masks and values; each layer then finishes its reductions itself (as ``overlap="intra"``).
    """

    hidden_size: int
    num_attention_heads: int
    num_layers: int = 1
    num_query_groups: int = 0
    ffn_hidden_size: int = 0
    activation: str = "gelu"
    normalization: str = "layernorm"
    rotary: bool = False
    rotary_base: float = 10000.0
    bias: bool = True
    qkv_bias: Optional[bool] = None
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0
    params_dtype: str = "float32"
    split: str = "row"
    micro_batches: Optional[int] = None
    column_chunks: int = 1
    overlap: Optional[str] = None
    norm_epsilon: float = 1e-5
    init_std: float = 0.02
    seed: int = 1234
    recompute: bool = False

    def __post_init__(self) -> None:
        if self.micro_batches is None:
            self.micro_batches = 1 if self.split in ("column", "none") else 2
        if self.overlap is None:
            self.overlap = "intra" if self.split == "none" else "inter"

    def validate(self, tensor_parallel: int, batch_size: int = 0) -> int:
        """Raises ValueError naming the field that cannot be sharded; returns the FFN size."""
        return _impl.validate_transformer_config(dataclasses.asdict(self), tensor_parallel, batch_size)


def _group_or_world(group: Optional[dist.ProcessGroup]):
    if group is not None:
        return group
    if dist.is_available() and dist.is_initialized():
        return dist.group.WORLD
    return None  # one process, no group: tensor-parallel size 1


class _CppModule(nn.Module):
    """An nn.Module whose parameters are those of a C++ Domino module, under the same names."""

    def __init__(self, impl, group: Optional[dist.ProcessGroup] = None) -> None:
        super().__init__()
        self._impl = impl
        self._tp_group = group
        self._tp_mesh = None
        for name, tensor in impl.named_parameters():
            owner = self
            *path, leaf = name.split(".")
            for part in path:
                child = owner._modules.get(part)
                if child is None:
                    child = nn.Module()
                    child._domino_part_of = type(self).__name__  # a name holder, see above
                    owner.add_module(part, child)
                owner = child
            # Marks the C++ tensor itself as a Parameter (nn.Parameter's documented flag), so
            # updates by an optimizer reach the C++ module without a copy.
            tensor._is_param = True
            owner.register_parameter(leaf, tensor)

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

    def _checkpoint_entries(self) -> dict[str, torch.Tensor]:
        """This module's parameters as ``sharded_state_dict`` gives them (names relative to it)."""
        return self._shard_entries({name: p.detach() for name, p in self.named_parameters()})

    def _tp_size(self) -> int:
        group = self._tp_group
        return dist.get_world_size(group) if group is not None and dist.is_initialized() else 1

    def _blocks(self, tensors: dict[str, torch.Tensor]):
        """For tensors shaped like this rank's parameters, keyed by parameter name: (parameter,
        entry key, dim, this rank's piece) per fused block of each, in order; dim -1 and the
        whole tensor for a replicated one. Unnamed blocks are segment0, segment1, ..."""
        tp = self._tp_size()
        for name, dim, segments, names in self._impl.shard_layouts():
            if name not in tensors:
                continue
            local = tensors[name]
            if dim < 0:
                yield name, name, -1, local
                continue
            owner, _, leaf = name.rpartition(".")
            offset = 0
            for i, segment in enumerate(segments):
                piece = local.narrow(dim, offset, segment // tp)
                offset += segment // tp
                key = name
                if len(segments) > 1:
                    part = names[i] if names else f"segment{i}"
                    key = ".".join(p for p in (owner, part, leaf) if p)
                yield name, key, dim, piece

    def _shard_entries(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Checkpoint entries of tensors shaped like this rank's parameters (the parameters
        themselves, or an optimizer's state of them), keyed by parameter name: a DTensor view
        per fused block of each sharded one, the replicated ones as they are."""
        tp = self._tp_size()
        return {key: piece if dim < 0 or tp == 1 else self._as_dtensor(piece, dim, self._tp_group)
                for _, key, dim, piece in self._blocks(tensors)}

    def _as_dtensor(self, piece: torch.Tensor, dim: int, group) -> torch.Tensor:
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.tensor import DTensor, Shard
        if self._tp_mesh is None or self._tp_mesh.device_type != piece.device.type:
            self._tp_mesh = DeviceMesh.from_group(group, piece.device.type)
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
        super().__init__(type(self)._cpp(dataclasses.asdict(config), group), group)


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


class ShardedAttention(_ConfiguredModule):
    """Causal self-attention over this rank's heads (GQA, optional RoPE), output all-reduced."""

    _cpp = _impl.ShardedAttention


class ParallelMLP(_ConfiguredModule):
    """Column-parallel up-projection, gelu or SwiGLU, row-parallel down-projection."""

    _cpp = _impl.ParallelMLP


class ColumnParallelLinear(_CppModule):
    """``Y = X A^T + b`` with ``A``'s output rows cut over the group: the input is replicated,
    the output holds this rank's ``out_features / tp`` columns. In backward the input-gradient
    all-reduce overlaps the weight-gradient GEMM. ``out_segments`` lists fused blocks that are
    each cut over the ranks (for example ``[q, k, v]``); the default is one block.
    ``segment_names`` name the blocks in checkpoints (``sharded_state_dict``); unnamed blocks
    are stored as ``segment0``, ``segment1``, ..."""

    def __init__(self, in_features: int, out_features: int, group=None, bias: bool = True,
                 out_segments: Optional[list[int]] = None, seed: int = 1234,
                 init_std: float = 0.02, dtype: str = "float32",
                 segment_names: Optional[list[str]] = None):
        segments = list(out_segments) if out_segments else [out_features]
        if sum(segments) != out_features:
            raise ValueError(f"ColumnParallelLinear: out_segments {segments} sum to "
                             f"{sum(segments)}, not out_features={out_features}")
        group = _group_or_world(group)
        super().__init__(_impl.ColumnParallelLinear(in_features, segments, group, bias, seed,
                                                    init_std, dtype, list(segment_names or [])),
                         group)


class RowParallelLinear(_CppModule):
    """``Y = sum_r X_r B_r^T + b``: the input holds this rank's ``in_features / tp`` columns, the
    output is all-reduced and replicated; the bias is added once, after the sum."""

    def __init__(self, in_features: int, out_features: int, group=None, bias: bool = True,
                 seed: int = 1234, init_std: float = 0.02, dtype: str = "float32"):
        group = _group_or_world(group)
        super().__init__(_impl.RowParallelLinear(in_features, out_features, group, bias, seed,
                                                 init_std, dtype), group)


def sharded_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """``model.state_dict()`` as ``torch.distributed.checkpoint`` (DCP) needs it from a model
    with Domino layers: each tensor-parallel weight is a DTensor sharded over the layer's group
    (``Shard(0)`` for column-parallel rows, ``Shard(1)`` for row-parallel columns), and fused
    weights are stored as one entry per block, each a real slice of it (``attention.qkv.weight``
    as ``attention.qkv.q.weight``, ``.k.``, ``.v.``; SwiGLU's ``mlp.fc1.weight`` as
    ``mlp.fc1.gate.weight`` and ``mlp.fc1.up.weight``). Replicated tensors (norms, row-parallel
    biases) and every parameter or buffer outside Domino layers stay plain tensors. The keys are
    the same at every tensor-parallel size, so a checkpoint saved at one loads at another::

        dcp.save(sharded_state_dict(model), checkpoint_id=path)
        dcp.load(sharded_state_dict(other_model), checkpoint_id=path)  # other TP size or split

    Every entry shares memory with the model's parameters: ``dcp.load`` writes straight into
    them. At tensor-parallel size 1 (no group) the entries are plain tensors of the same names.
    For a per-rank file of this rank's shards, ``torch.save(model.state_dict())`` and
    ``model.load_state_dict(...)`` still work as for any module.
    """
    state = model.state_dict()
    layers = [prefix for prefix, module in model.named_modules() if isinstance(module, _CppModule)]
    for prefix, module in model.named_modules():
        part_of = getattr(module, "_domino_part_of", None)
        if part_of is not None and not any(prefix.startswith(p + ".") or p == "" for p in layers):
            raise ValueError(
                f"sharded_state_dict: '{prefix or type(model).__name__}' holds names of a "
                f"{part_of}'s parameters, not the layer; call it on the {part_of} (or a module "
                "holding it), which knows how its weights are cut")
    domino = {}  # storage of every Domino parameter -> its name
    for prefix, module in model.named_modules():
        if not isinstance(module, _CppModule):
            continue
        head = prefix + "." if prefix else ""
        for name, param in module.named_parameters():
            state.pop(head + name, None)
            domino[param.untyped_storage().data_ptr()] = head + name
        for name, entry in module._checkpoint_entries().items():
            state[head + name] = entry
    # A Domino weight reached under another name (a tied weight, a module registered twice, a
    # part of a Domino layer passed on its own) would be one rank's shard under one key: DCP
    # would keep one rank's and load it everywhere.
    for key, value in state.items():
        if torch.is_tensor(value) and type(value).__name__ != "DTensor" and value.numel() > 0:
            owner = domino.get(value.untyped_storage().data_ptr())
            if owner is not None and owner != key and not key.startswith(owner.rpartition(".")[0]):
                raise ValueError(
                    f"sharded_state_dict: '{key}' is the Domino parameter '{owner}' under another "
                    "name, which would save one rank's shard for every rank; untie it or call "
                    "sharded_state_dict on a module that holds the whole Domino layer")
    return state


def _domino_parameters(model: nn.Module) -> dict[str, tuple[_CppModule, str]]:
    """Each parameter of a Domino layer in model, by its name in model: its layer, its name there."""
    owners = {}
    for prefix, module in model.named_modules():
        if isinstance(module, _CppModule):
            head = prefix + "." if prefix else ""
            for name, _ in module.named_parameters():
                owners[head + name] = (module, name)
    return owners


def sharded_optimizer_state_dict(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer's state as ``torch.distributed.checkpoint`` needs it, next to
    ``sharded_state_dict(model)``: ``get_optimizer_state_dict``'s (keys are parameter names),
    with every state tensor of a Domino layer's weight (AdamW's ``exp_avg``, ``exp_avg_sq``) cut
    like the weight itself, so it reshards to another tensor-parallel size::

        dcp.save({"model": sharded_state_dict(model),
                  "optim": sharded_optimizer_state_dict(model, opt)}, checkpoint_id=path)
        state = {"model": sharded_state_dict(model), "optim": sharded_optimizer_state_dict(model, opt)}
        dcp.load(state, checkpoint_id=path)
        set_sharded_optimizer_state_dict(model, opt, state["optim"])

    An optimizer that has not stepped yet gets its state made first (a step with zero gradients
    and learning rate, as ``get_optimizer_state_dict`` does). The state tensors are the
    optimizer's own: ``dcp.load`` writes into them; ``set_sharded_optimizer_state_dict`` then
    restores the hyperparameters of the param groups.
    """
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict
    plain = get_optimizer_state_dict(model, optimizer)
    owners = _domino_parameters(model)
    params = dict(model.named_parameters())
    state, renamed = {}, {}
    for fqn, values in plain["state"].items():
        if fqn not in owners:
            state[fqn] = values
            continue
        module, name = owners[fqn]
        head = fqn[: len(fqn) - len(name)]
        shaped = {k: v for k, v in values.items()
                  if torch.is_tensor(v) and v.shape == params[fqn].shape}
        pieces: dict[str, dict] = {}
        for key, value in shaped.items():
            for piece, tensor in module._shard_entries({name: value}).items():
                pieces.setdefault(head + piece, {})[key] = tensor
        for piece in pieces:  # the scalars (AdamW's step) go with every piece
            pieces[piece].update({k: v for k, v in values.items() if k not in shaped})
        state.update(pieces)
        renamed[fqn] = sorted(pieces) if pieces else [fqn]
        if not pieces:
            state[fqn] = values
    groups = []
    for group in plain["param_groups"]:
        group = dict(group)
        group["params"] = [piece for fqn in group["params"] for piece in renamed.get(fqn, [fqn])]
        groups.append(group)
    return {"state": state, "param_groups": groups}


def set_sharded_optimizer_state_dict(model: nn.Module, optimizer: torch.optim.Optimizer,
                                     loaded: dict) -> None:
    """After ``dcp.load`` into ``sharded_optimizer_state_dict(model, optimizer)``: gives the
    optimizer the loaded param groups' hyperparameters (the state tensors already hold what was
    loaded), through ``set_optimizer_state_dict``."""
    from torch.distributed.checkpoint.state_dict import (get_optimizer_state_dict,
                                                         set_optimizer_state_dict)
    plain = get_optimizer_state_dict(model, optimizer)
    if len(loaded["param_groups"]) != len(plain["param_groups"]):
        raise ValueError(f"set_sharded_optimizer_state_dict: the checkpoint has "
                         f"{len(loaded['param_groups'])} param groups, this optimizer "
                         f"{len(plain['param_groups'])}")
    for group, saved in zip(plain["param_groups"], loaded["param_groups"]):
        group.update({k: v for k, v in saved.items() if k != "params"})
    set_optimizer_state_dict(model, optimizer, plain)


# Hugging Face decoder families whose layers are Domino layers: pre-norm RMSNorm, rotate-half
# rotary embeddings, GQA attention without biases, SwiGLU MLP.
_HF_LLAMA_LIKE = ("llama", "mistral", "qwen2")


def _gpt2_config(cfg, schedule: dict, dtype: str) -> TransformerConfig:
    if cfg.activation_function not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
        raise ValueError(f"from_hf: GPT-2 with activation_function={cfg.activation_function!r}; "
                         "supported: gelu_new, gelu_pytorch_tanh, gelu")
    if getattr(cfg, "scale_attn_by_inverse_layer_idx", False) or not getattr(
            cfg, "scale_attn_weights", True):
        raise ValueError("from_hf: GPT-2 with attention scaled other than by 1/sqrt(head_dim)")
    fields = dict(
        hidden_size=cfg.n_embd, num_attention_heads=cfg.n_head, num_layers=cfg.n_layer,
        ffn_hidden_size=cfg.n_inner or 4 * cfg.n_embd,
        activation="gelu" if cfg.activation_function == "gelu" else "gelu_tanh",
        normalization="layernorm", rotary=False, bias=True, norm_epsilon=cfg.layer_norm_epsilon,
        params_dtype=dtype)
    return TransformerConfig(**{**fields, **schedule})


# A GPT-2 block's tensors: (Domino's name, GPT-2's name, whether Conv1D's [in, out] is
# transposed to torch.nn.Linear's [out, in]).
_GPT2_BLOCK = (
    ("input_norm.weight", "ln_1.weight", False), ("input_norm.bias", "ln_1.bias", False),
    ("attention.qkv.weight", "attn.c_attn.weight", True),
    ("attention.qkv.bias", "attn.c_attn.bias", False),
    ("attention.proj.weight", "attn.c_proj.weight", True),
    ("attention.proj.bias", "attn.c_proj.bias", False),
    ("post_attention_norm.weight", "ln_2.weight", False),
    ("post_attention_norm.bias", "ln_2.bias", False),
    ("mlp.fc1.weight", "mlp.c_fc.weight", True), ("mlp.fc1.bias", "mlp.c_fc.bias", False),
    ("mlp.fc2.weight", "mlp.c_proj.weight", True), ("mlp.fc2.bias", "mlp.c_proj.bias", False))


def _gpt2_weights(base) -> dict[str, torch.Tensor]:
    theirs = dict(base.named_parameters())
    full = {"final_norm.weight": base.ln_f.weight, "final_norm.bias": base.ln_f.bias}
    for i in range(len(base.h)):
        for ours, name, transpose in _GPT2_BLOCK:
            tensor = theirs[f"h.{i}.{name}"]
            full[f"layers.{i}.{ours}"] = tensor.t() if transpose else tensor
    return full


def from_hf(model: nn.Module, group: Optional[dist.ProcessGroup] = None, **schedule) -> "DominoTransformer":
    """A ``DominoTransformer`` holding this rank's shards of a Hugging Face model's decoder stack
    and final norm, computing the same function: ``out = domino(hidden)`` on ``[s, b, h]``
    equals ``model(inputs_embeds=hidden.transpose(0, 1)).last_hidden_state.transpose(0, 1)``.

    Every rank must pass the same weights (each keeps its own slice of its own copy). Dropout
    rates are not taken from the model: give ``hidden_dropout`` / ``attention_dropout`` in
    ``schedule`` if you want them. ``model`` is a ``transformers`` model (``LlamaForCausalLM``, ``MistralModel``,
    ``GPT2LMHeadModel``, ...) or its ``.model`` (``.transformer`` for GPT-2). For GPT-2 the input
    is the token embeddings plus its learned position embeddings (``wte`` + ``wpe``), which stay
    the user's. ``schedule`` sets the Domino fields (``split``, ``micro_batches``,
    ``column_chunks``, ``overlap``, dropout, ``seed``). Families: Llama 2/3 and Mistral-style
    GQA (``model_type`` llama, mistral), Qwen2 (biases on q, k and v only) and GPT-2 (LayerNorm,
    the tanh-approximate gelu, Conv1D weights, biases everywhere). A model this
    cannot reproduce (another family, rope scaling, other biases, an activation other than
    SiLU, a head dimension other than ``hidden_size / heads``, a sliding window) raises
    ``ValueError`` naming what differs.
    """
    base = getattr(model, "model", None) or getattr(model, "transformer", None) or model
    cfg = base.config
    kind = getattr(cfg, "model_type", type(base).__name__)

    def refuse(why: str):
        raise ValueError(f"from_hf: {type(model).__name__} ({kind}) {why}")

    dtypes = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16",
              torch.float16: "float16"}
    if kind == "gpt2":
        dtype = dtypes[base.h[0].attn.c_attn.weight.dtype]
        domino = DominoTransformer(_gpt2_config(cfg, schedule, dtype), group)
        domino.load_unsharded({k: v.detach() for k, v in _gpt2_weights(base).items()})
        return domino
    if kind not in _HF_LLAMA_LIKE:
        refuse("is not a supported family; supported model_type: "
               f"{', '.join(_HF_LLAMA_LIKE + ('gpt2',))}")
    if getattr(cfg, "hidden_act", "silu") != "silu":
        refuse(f"uses hidden_act={cfg.hidden_act!r}; Domino's SwiGLU is silu(gate) * up")
    qkv_bias = kind == "qwen2"  # Qwen2's q/k/v projections have biases, nothing else does
    if kind != "qwen2" and (getattr(cfg, "attention_bias", False) or getattr(cfg, "mlp_bias", False)):
        refuse("has projection biases; the Llama-family import has none")
    sliding = getattr(cfg, "sliding_window", None) is not None and (
        kind == "mistral" or "sliding_attention" in (getattr(cfg, "layer_types", None) or []))
    if sliding:
        refuse(f"uses a sliding attention window ({cfg.sliding_window} tokens); Domino attends to "
               "the whole causal prefix (set config.sliding_window = None if sequences never "
               "exceed it)")
    heads = cfg.num_attention_heads
    if getattr(cfg, "head_dim", None) not in (None, cfg.hidden_size // heads):
        refuse(f"has head_dim={cfg.head_dim}, not hidden_size / heads = {cfg.hidden_size // heads}")
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        refuse(f"uses rope_type={rope.get('rope_type', rope.get('type'))!r}; only plain rotary "
               "embeddings are supported")
    theta = rope.get("rope_theta") or getattr(cfg, "rope_theta", None) or 10000.0
    weight = base.layers[0].self_attn.q_proj.weight
    fields = dict(
        hidden_size=cfg.hidden_size, num_attention_heads=heads,
        num_query_groups=getattr(cfg, "num_key_value_heads", None) or heads,
        num_layers=cfg.num_hidden_layers, ffn_hidden_size=cfg.intermediate_size,
        activation="swiglu", normalization="rmsnorm", rotary=True, rotary_base=float(theta),
        bias=False, qkv_bias=qkv_bias, norm_epsilon=cfg.rms_norm_eps,
        params_dtype=dtypes[weight.dtype])
    config = TransformerConfig(**{**fields, **schedule})
    domino = DominoTransformer(config, group)
    full = {"final_norm.weight": base.norm.weight}
    for i, layer in enumerate(base.layers):
        a, m, p = layer.self_attn, layer.mlp, f"layers.{i}."
        full[p + "input_norm.weight"] = layer.input_layernorm.weight
        full[p + "attention.qkv.weight"] = torch.cat([a.q_proj.weight, a.k_proj.weight,
                                                      a.v_proj.weight])
        if qkv_bias:
            full[p + "attention.qkv.bias"] = torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias])
        full[p + "attention.proj.weight"] = a.o_proj.weight
        full[p + "post_attention_norm.weight"] = layer.post_attention_layernorm.weight
        full[p + "mlp.fc1.weight"] = torch.cat([m.gate_proj.weight, m.up_proj.weight])
        full[p + "mlp.fc2.weight"] = m.down_proj.weight
    domino.load_unsharded({k: v.detach() for k, v in full.items()})
    return domino


def _gathered(module: "_CppModule") -> dict[str, torch.Tensor]:
    """Every parameter of a Domino layer as a whole tensor, gathered from the group's ranks
    (collective over the layer's group)."""
    tp = module._tp_size()
    blocks: dict[str, list[torch.Tensor]] = {}
    dims: dict[str, int] = {}
    params = {name: p.detach() for name, p in module.named_parameters()}
    for name, _, dim, piece in module._blocks(params):
        dims[name] = dim
        if dim < 0 or tp == 1:
            blocks.setdefault(name, []).append(piece.clone())
            continue
        # Each block gathered on its own: every rank holds a slice of each.
        parts = [torch.empty_like(piece.contiguous()) for _ in range(tp)]
        dist.all_gather(parts, piece.contiguous(), group=module._tp_group)
        blocks.setdefault(name, []).append(torch.cat(parts, dim))
    return {name: parts[0] if len(parts) == 1 else torch.cat(parts, max(dims[name], 0))
            for name, parts in blocks.items()}


def to_hf_state_dict(model: "DominoTransformer", model_type: str = "llama") -> dict[str, torch.Tensor]:
    """The decoder layers and final norm of a ``DominoTransformer`` as a Hugging Face model of
    ``model_type`` (llama, mistral, qwen2) names them, whole tensors gathered from every rank
    of the group (call it on every rank): load it with
    ``hf_model.model.load_state_dict(state, strict=False)`` (``hf_model.transformer`` for
    gpt2; the embeddings and LM head are the user's). The inverse of ``from_hf``."""
    config = model.config
    if model_type == "gpt2":
        if (config.normalization != "layernorm" or config.activation not in ("gelu", "gelu_tanh")
                or config.rotary or not config.bias or config.num_query_groups not in (
                    0, config.num_attention_heads)):
            raise ValueError("to_hf_state_dict: a GPT-2 has LayerNorm, gelu, biases, learned "
                             "positions and no GQA; this model's config does not match")
        full = _gathered(model)
        out = {"ln_f.weight": full["final_norm.weight"], "ln_f.bias": full["final_norm.bias"]}
        for i in range(model.config.num_layers):
            for ours, theirs, transpose in _GPT2_BLOCK:
                tensor = full[f"layers.{i}.{ours}"]
                out[f"h.{i}.{theirs}"] = (tensor.t() if transpose else tensor).contiguous().clone()
        return out
    if model_type not in _HF_LLAMA_LIKE:
        raise ValueError(f"to_hf_state_dict: model_type '{model_type}' is not supported; "
                         f"supported: {', '.join(_HF_LLAMA_LIKE + ('gpt2',))}")
    if config.activation != "swiglu" or config.normalization != "rmsnorm" or not config.rotary:
        raise ValueError("to_hf_state_dict: a Llama-family model has SwiGLU, RMSNorm and rotary "
                         f"embeddings; this one has {config.activation}, {config.normalization}, "
                         f"rotary={config.rotary}")
    qkv_bias = config.bias if config.qkv_bias is None else config.qkv_bias
    if config.bias or qkv_bias != (model_type == "qwen2"):
        raise ValueError(f"to_hf_state_dict: a {model_type} model has "
                         f"{'q/k/v biases only' if model_type == 'qwen2' else 'no biases'}; this one "
                         f"has bias={config.bias}, qkv_bias={config.qkv_bias}")
    full = _gathered(model)
    q = config.num_attention_heads * (config.hidden_size // config.num_attention_heads)
    kv = (config.num_query_groups or config.num_attention_heads) * (
        config.hidden_size // config.num_attention_heads)
    ffn = full["layers.0.mlp.fc2.weight"].shape[1]
    out = {"norm.weight": full["final_norm.weight"]}
    for i in range(config.num_layers):
        p, h = f"layers.{i}.", f"layers.{i}."
        qkv = full[p + "attention.qkv.weight"]
        out[h + "self_attn.q_proj.weight"], out[h + "self_attn.k_proj.weight"], \
            out[h + "self_attn.v_proj.weight"] = qkv.split([q, kv, kv])
        if p + "attention.qkv.bias" in full:
            out[h + "self_attn.q_proj.bias"], out[h + "self_attn.k_proj.bias"], \
                out[h + "self_attn.v_proj.bias"] = full[p + "attention.qkv.bias"].split([q, kv, kv])
        out[h + "self_attn.o_proj.weight"] = full[p + "attention.proj.weight"]
        gate, up = full[p + "mlp.fc1.weight"].split([ffn, ffn])
        out[h + "mlp.gate_proj.weight"], out[h + "mlp.up_proj.weight"] = gate, up
        out[h + "mlp.down_proj.weight"] = full[p + "mlp.fc2.weight"]
        out[h + "input_layernorm.weight"] = full[p + "input_norm.weight"]
        out[h + "post_attention_layernorm.weight"] = full[p + "post_attention_norm.weight"]
    return {k: v.clone() for k, v in out.items()}  # no views: savable as safetensors
