"""A Domino layer in Megatron-Core's place: built by TransformerBlock from a layer spec, called
as its TransformerLayer is, with Megatron-Core's parameter names and shard layouts."""

from __future__ import annotations

import torch
import torch.distributed as dist
from megatron.core.dist_checkpointing.utils import apply_prefix_mapping
from megatron.core.process_groups_config import ProcessGroupCollection
from megatron.core.tensor_parallel.layers import set_tensor_model_parallel_attributes
from megatron.core.transformer.mlp import apply_swiglu_sharded_factory
from megatron.core.transformer.module import MegatronModule
from megatron.core.transformer.transformer_layer import (BaseTransformerLayer,
                                                         get_transformer_layer_offset)
from megatron.core.transformer.utils import make_sharded_tensors_for_checkpoint
from megatron.core.utils import get_pg_rank, make_viewless_tensor
from torch import nn

from .. import _C
from ..overlap.layers import register_parameters
from .config import domino_config

# The Domino layer's parameter paths and Megatron-Core's local spec's.
_NAMES = {
    "input_norm": "input_layernorm",
    "attention.qkv": "self_attention.linear_qkv",
    "attention.proj": "self_attention.linear_proj",
    "post_attention_norm": "pre_mlp_layernorm",
    "mlp.fc1": "mlp.linear_fc1",
    "mlp.fc2": "mlp.linear_fc2",
}
# Megatron-Core's linears: (path, sharded dim of weight and bias, checkpoint axis map).
_LINEARS = {
    "self_attention.linear_qkv": (0, {"weight": 0, "bias": 0}),
    "self_attention.linear_proj": (1, {"weight": 1}),
    "mlp.linear_fc1": (0, {"weight": 0, "bias": 0}),
    "mlp.linear_fc2": (1, {"weight": 1}),
}
# Megatron-Core's local spec checkpoints its norms under the next linear's name.
_CHECKPOINT_NAMES = {"input_layernorm.": "self_attention.linear_qkv.layer_norm_",
                     "pre_mlp_layernorm.": "mlp.linear_fc1.layer_norm_"}


def _megatron_name(name: str) -> str:
    path, _, leaf = name.rpartition(".")
    return f"{_NAMES.get(path, path)}.{leaf}"


class _Linear(nn.Module):
    """Names a linear's weight and bias as Megatron-Core's do, with its (empty) extra state, so
    state dicts of either layer load into the other."""

    def get_extra_state(self):
        return None

    def set_extra_state(self, state) -> None:
        pass


def _holder(path: str) -> nn.Module:
    return _Linear() if path in _LINEARS else nn.Module()


class _Causal:
    """Whether attention masks are causal, checked once per mask."""

    def __init__(self) -> None:
        self._seen = None  # the mask last checked (held, so no other takes its place) and version

    def check(self, mask) -> None:
        if mask is None:
            return
        if self._seen is not None and self._seen[0] is mask and self._seen[1] == mask._version:
            return
        s = mask.shape[-1]
        causal = torch.ones(s, s, dtype=torch.bool, device=mask.device).triu(1)
        if mask.dtype != torch.bool or mask.shape[-2] != s or not bool(
                (mask == causal).all()):
            raise ValueError(
                "torch_domino.megatron: the attention mask is not the causal one (True above the "
                "diagonal); the Domino layer attends causally only (no padding or document masks)")
        self._seen = (mask, mask._version)


class DominoLayer(MegatronModule, BaseTransformerLayer):
    """One Domino transformer layer (attention, MLP) built from Megatron-Core's
    ``TransformerConfig`` over the tensor-parallel group Megatron made, hiding its reductions
    behind compute with the spec's schedule (``split``, ``micro_batches``, ``column_chunks``;
    ``overlap`` is ``"intra"``: the block passes finished tensors between layers).

    Its parameters carry Megatron-Core's names and shard layouts (fused QKV per query group,
    SwiGLU's ``[gate; up]`` per rank) and tensor-parallel attributes, so a state dict of the
    local spec's layer loads into it and back, and ``sharded_state_dict`` writes what
    ``megatron.core.dist_checkpointing`` saves and reshards. Under ``sequence_parallel`` the
    hidden state is ``[s/tp, b, h]``; gradients of the norms and of the biases added after a
    reduce-scatter are summed over the group inside the layer, so they are not marked for
    ``finalize_model_grads``."""

    def __init__(self, config, submodules=None, layer_number: int = 1, hidden_dropout=None,
                 pg_collection=None, vp_stage=None, split: str = "row", micro_batches=None,
                 column_chunks: int = 1, overlap=None, **unused):
        super().__init__(config=config)
        if pg_collection is None:
            pg_collection = ProcessGroupCollection.use_mpu_process_groups()
        self.tp_group = pg_collection.tp
        pp = getattr(pg_collection, "pp", None)
        self.layer_number = layer_number + get_transformer_layer_offset(
            config, vp_stage, get_pg_rank(pp) if pp is not None else None)
        tp = dist.get_world_size(self.tp_group) if self.tp_group is not None else 1
        # Weights from the default generator, as Megatron's own CPU initialization draws them:
        # the same on every tensor-parallel rank under one torch.manual_seed.
        seed = int(torch.randint(0, 2**62, (1,)).item())
        self.domino_config = domino_config(config, tp, split, micro_batches, column_chunks,
                                           overlap, hidden_dropout, seed)
        self._impl = _C.overlap.DominoTransformerLayer(self.domino_config, self.tp_group)
        register_parameters(self, self._impl, _megatron_name, _holder)
        for path, (dim, _) in _LINEARS.items():
            for leaf, param in self.get_submodule(path).named_parameters():
                if leaf == "weight" or dim == 0:
                    stride = 2 if path == "mlp.linear_fc1" and config.gated_linear_unit else 1
                    set_tensor_model_parallel_attributes(param, True, dim, stride)
        # Megatron-Core's own layers allocate on the current CUDA device unless told to
        # initialize on the CPU; GPTModel's embedding and output layer sit there beside this one.
        if not config.use_cpu_initialization and torch.cuda.is_available():
            self.to(torch.device("cuda", torch.cuda.current_device()))
        self._causal = _Causal()

    def train(self, mode: bool = True):
        super().train(mode)
        self._impl.train(mode)
        return self

    def forward(self, hidden_states, attention_mask=None, context=None, context_mask=None,
                rotary_pos_emb=None, rotary_pos_cos=None, rotary_pos_sin=None,
                rotary_pos_cos_sin=None, attention_bias=None, inference_context=None,
                packed_seq_params=None, sequence_len_offset=None, padding_mask=None, **kwargs):
        unsupported = {"context": context, "context_mask": context_mask,
                       "rotary_pos_cos": rotary_pos_cos, "rotary_pos_sin": rotary_pos_sin,
                       "rotary_pos_cos_sin": rotary_pos_cos_sin, "attention_bias": attention_bias,
                       "inference_context": inference_context,
                       "packed_seq_params": packed_seq_params,
                       "sequence_len_offset": sequence_len_offset,
                       **{k: v for k, v in kwargs.items() if k != "inference_params"},
                       "inference_params": kwargs.get("inference_params")}
        given = [name for name, value in unsupported.items() if value is not None]
        if given:
            raise ValueError(f"torch_domino.megatron.DominoLayer: {', '.join(given)} given; the "
                             "Domino layer serves causal self-attention in training and "
                             "evaluation, without cross-attention, packed sequences, attention "
                             "biases or inference caches")
        self._causal.check(attention_mask)
        if isinstance(rotary_pos_emb, tuple):
            query, key = rotary_pos_emb
            if key is not query and not torch.equal(query, key):
                raise ValueError("torch_domino.megatron.DominoLayer: different rotary embeddings "
                                 "for queries and keys")
            rotary_pos_emb = query
        if rotary_pos_emb is None:
            out = self._impl.forward(hidden_states)
        else:
            out = self._impl.forward_rotated(hidden_states, rotary_pos_emb)
        return make_viewless_tensor(inp=out, requires_grad=out.requires_grad,
                                    keep_graph=True), context

    def sharded_state_dict(self, prefix: str = "", sharded_offsets: tuple = (),
                           metadata=None):
        """What Megatron-Core's local spec's layer writes: the same keys, shard axes and
        replicas, so checkpoints interchange and reshard."""
        metadata = metadata or {}
        dp_cp_group = metadata.get("dp_cp_group")
        singleton = metadata.get("singleton_local_shards", False)
        sharded = {}
        for path in ("input_layernorm", "pre_mlp_layernorm", *_LINEARS):
            module = self.get_submodule(path)
            axis_map = _LINEARS[path][1] if path in _LINEARS else {}
            part = make_sharded_tensors_for_checkpoint(
                module.state_dict(prefix="", keep_vars=True), f"{prefix}{path}.", axis_map,
                sharded_offsets, tp_group=self.tp_group, dp_cp_group=dp_cp_group)
            if path == "mlp.linear_fc1" and self.config.gated_linear_unit:
                for key in (f"{prefix}{path}.weight", f"{prefix}{path}.bias"):
                    if key in part:
                        part[key] = apply_swiglu_sharded_factory(part[key], sharded_offsets,
                                                                 singleton)
            sharded.update(part)
        apply_prefix_mapping(sharded, {prefix + k: prefix + v for k, v in _CHECKPOINT_NAMES.items()})
        return sharded
