"""A Megatron-Core ``TransformerConfig`` as the Domino layer's ``TransformerConfig``, or a
ValueError naming the first field (and value) the Domino layer cannot compute."""

from __future__ import annotations

import functools
from typing import Optional

import torch
import torch.nn.functional as F

from ..overlap.config import TransformerConfig

_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.bfloat16: "bfloat16",
           torch.float16: "float16"}

# Fields that change a layer's function, and the value the Domino layer computes. A field a
# Megatron-Core release lacks is not checked.
_MUST_EQUAL = {
    "layernorm_zero_centered_gamma": False,
    "qk_layernorm": False,
    "qk_l2_norm": False,
    "softmax_type": "vanilla",
    "window_size": None,
    "multi_latent_attention": False,
    "attention_output_gate": False,
    "experimental_attention_variant": None,
    "num_moe_experts": None,
    "rotary_interleaved": False,
    "no_rope_freq": None,
    "fp32_residual_connection": False,
    "apply_residual_connection_post_layernorm": False,
    "glu_linear_offset": 0.0,
    "activation_func_clamp_value": None,
    "context_parallel_size": 1,
    "fp8": None,
    "fp4": None,
    "tp_comm_overlap": False,
    "cuda_graph_impl": "none",
    "inference_fuse_tp_communication": False,
    "heterogeneous_block_specs": False,
    "delay_wgrad_compute": False,
}


def _refuse(field: str, value, why: str):
    raise ValueError(f"torch_domino.megatron: TransformerConfig.{field}={value!r} {why}")


def _activation(config) -> str:
    func = config.activation_func
    gated = config.gated_linear_unit
    if gated:
        if func is F.silu:
            return "swiglu"
        _refuse("activation_func", func, "with gated_linear_unit=True: the Domino layer's gated "
                "unit is SwiGLU, silu(gate) * up (activation_func=F.silu)")
    tanh = isinstance(func, functools.partial) and func.func is F.gelu and \
        func.keywords.get("approximate") == "tanh"
    if tanh or getattr(config, "openai_gelu", False):
        return "gelu_tanh"
    if func is F.gelu:
        # Megatron's fused bias-gelu is the tanh approximation.
        return "gelu_tanh" if getattr(config, "bias_activation_fusion", False) else "gelu"
    _refuse("activation_func", func, "is not one the Domino layer computes: F.gelu (exact, or "
            "tanh-approximate), or F.silu with gated_linear_unit=True")


def _softmax_scale(config) -> Optional[float]:
    # Megatron's apply_query_key_layer_scaling divides the scale by the layer number and its
    # softmax multiplies by it again: the scores see softmax_scale (or 1/sqrt(kv_channels)).
    scale = getattr(config, "softmax_scale", None)
    return None if scale is None else float(scale)


def domino_config(config, tensor_parallel: int, split: str = "row",
                  micro_batches: Optional[int] = None, column_chunks: int = 1,
                  overlap: Optional[str] = None, hidden_dropout: Optional[float] = None,
                  seed: int = 1234) -> TransformerConfig:
    """The Domino layer config computing what Megatron-Core's local spec computes for `config`
    at `tensor_parallel` ranks; raises ValueError naming what it cannot."""
    for field, wanted in _MUST_EQUAL.items():
        if hasattr(config, field) and getattr(config, field) != wanted:
            _refuse(field, getattr(config, field), f"is not supported by the Domino layer (it "
                    f"computes {field}={wanted!r})")
    heads = config.num_attention_heads
    if config.kv_channels is not None and config.kv_channels * heads != config.hidden_size:
        _refuse("kv_channels", config.kv_channels, f"differs from hidden_size / "
                f"num_attention_heads = {config.hidden_size // heads}; the Domino layer's heads "
                "have that size")
    if config.normalization not in ("LayerNorm", "RMSNorm"):
        _refuse("normalization", config.normalization, "is not LayerNorm or RMSNorm")
    if overlap == "inter":
        _refuse("(spec) overlap", overlap, "cannot cross layers inside Megatron-Core's "
                "TransformerBlock, which passes finished tensors from layer to layer; use "
                "overlap='intra' (the default here)")
    if config.params_dtype not in _DTYPES:
        _refuse("params_dtype", config.params_dtype, f"is not one of {list(_DTYPES)}")
    groups = config.num_query_groups or heads
    if groups % tensor_parallel:
        _refuse("num_query_groups", groups, f"is not a multiple of the tensor-parallel size "
                f"{tensor_parallel}; the Domino layer keeps whole query groups per rank")
    domino = TransformerConfig(
        hidden_size=config.hidden_size, num_attention_heads=heads, num_layers=config.num_layers,
        num_query_groups=groups, ffn_hidden_size=config.ffn_hidden_size,
        activation=_activation(config),
        normalization="layernorm" if config.normalization == "LayerNorm" else "rmsnorm",
        bias=bool(config.add_bias_linear),
        qkv_bias=bool(config.add_bias_linear or getattr(config, "add_qkv_bias", False)),
        hidden_dropout=float(config.hidden_dropout if hidden_dropout is None else hidden_dropout),
        attention_dropout=float(config.attention_dropout),
        params_dtype=_DTYPES[config.params_dtype], split=split, micro_batches=micro_batches,
        column_chunks=column_chunks, overlap=overlap or "intra",
        norm_epsilon=float(config.layernorm_epsilon), init_std=float(config.init_method_std),
        seed=seed, sequence_parallel=bool(config.sequence_parallel), qkv_layout="groups",
        softmax_scale=_softmax_scale(config))
    try:
        domino.validate(tensor_parallel)
    except ValueError as error:
        raise ValueError(f"torch_domino.megatron: {error}") from None
    return domino
