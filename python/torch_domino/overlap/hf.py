"""Hugging Face models in and out: ``from_hf`` builds a ``DominoTransformer`` holding this
rank's shards of a ``transformers`` decoder; ``to_hf_state_dict`` gathers one back."""

from __future__ import annotations

from typing import Optional

import torch
import torch.distributed as dist
from torch import nn

from .config import TransformerConfig
from .layers import DominoTransformer, _CppModule

# Hugging Face decoder families whose layers are Domino layers: pre-norm RMSNorm, rotate-half
# rotary embeddings, GQA attention without biases, SwiGLU MLP.
_HF_LLAMA_LIKE = ("llama", "mistral", "qwen2")


def _gpt2_config(cfg, schedule: dict, dtype: str) -> TransformerConfig:
    if cfg.activation_function not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
        raise ValueError(f"from_hf: GPT-2 with activation_function={cfg.activation_function!r}; "
                         "supported: gelu_new, gelu_pytorch_tanh, gelu")
    if getattr(cfg, "scale_attn_by_inverse_layer_idx", False):
        raise ValueError("from_hf: GPT-2 with scale_attn_by_inverse_layer_idx=True scales each "
                         "layer's attention differently; a DominoTransformer has one "
                         "softmax_scale for all layers")
    # scale_attn_weights=False: scores are not divided by sqrt(head_dim).
    unscaled = {} if getattr(cfg, "scale_attn_weights", True) else {"softmax_scale": 1.0}
    fields = dict(
        hidden_size=cfg.n_embd, num_attention_heads=cfg.n_head, num_layers=cfg.n_layer,
        ffn_hidden_size=cfg.n_inner or 4 * cfg.n_embd,
        activation="gelu" if cfg.activation_function == "gelu" else "gelu_tanh",
        normalization="layernorm", rotary=False, bias=True, norm_epsilon=cfg.layer_norm_epsilon,
        params_dtype=dtype, **unscaled)
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
    the tanh-approximate gelu, Conv1D weights, biases everywhere; ``scale_attn_weights=False``
    becomes ``softmax_scale=1.0``). A model this
    cannot reproduce (another family, rope scaling, other biases, an activation other than
    SiLU, a head dimension other than ``hidden_size / heads``, a sliding window) raises
    ``ValueError`` naming what differs.
    """
    if schedule.get("qkv_layout", "blocks") != "blocks":
        raise ValueError(f"from_hf: qkv_layout={schedule['qkv_layout']!r}; Hugging Face's q, k "
                         "and v load into the blocks layout only")
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
    tp, layout = module._tp_size(), module._layout
    out = {}
    for name, param in module.named_parameters():
        local = param.detach()
        dim = layout.params[name][0]
        if dim < 0 or tp == 1:
            out[name] = local.clone()
            continue
        # Each fused block gathered on its own: every rank holds a slice of each.
        pieces = [piece for _, piece in layout.pieces(name, local)] or [local]
        wholes = []
        for piece in pieces:
            parts = [torch.empty_like(piece.contiguous()) for _ in range(tp)]
            dist.all_gather(parts, piece.contiguous(), group=module._tp_group)
            wholes.append(torch.cat(parts, dim))
        out[name] = torch.cat(wholes, dim)
    return out


def to_hf_state_dict(model: "DominoTransformer", model_type: str = "llama") -> dict[str, torch.Tensor]:
    """The decoder layers and final norm of a ``DominoTransformer`` as a Hugging Face model of
    ``model_type`` (llama, mistral, qwen2) names them, whole tensors gathered from every rank
    of the group (call it on every rank): load it with
    ``hf_model.model.load_state_dict(state, strict=False)`` (``hf_model.transformer`` for
    gpt2; the embeddings and LM head are the user's). The inverse of ``from_hf``."""
    config = model.config
    if config.qkv_layout != "blocks":
        raise ValueError(f"to_hf_state_dict: qkv_layout={config.qkv_layout!r}; only the blocks "
                         "layout ([q; k; v]) is written out")
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
