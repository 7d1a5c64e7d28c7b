"""A plain single-process transformer, written from the math with no sharding and no overlap:
the reference the Domino layers are checked against. It reads the unsharded weights by the
Domino models' parameter names."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def ffn_size(cfg: dict) -> int:
    if cfg.get("ffn_hidden_size"):
        return cfg["ffn_hidden_size"]
    h = cfg["hidden_size"]
    return (8 * h // 3 + 63) // 64 * 64 if cfg.get("activation") == "swiglu" else 4 * h


def full_state(cfg: dict, seed: int, layers: int | None = None, prefix: str = "layers.",
               final_norm: bool = True) -> dict[str, torch.Tensor]:
    """Random unsharded weights (norm weights too, so every parameter matters)."""
    g = torch.Generator().manual_seed(seed)
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    groups = cfg.get("num_query_groups") or heads
    d = h // heads
    f = ffn_size(cfg)
    bias = cfg.get("bias", True)
    rms = cfg.get("normalization") == "rmsnorm"
    up = 2 * f if cfg.get("activation") == "swiglu" else f

    def rand(*shape, scale=0.2):
        return torch.randn(*shape, generator=g) * scale

    def norm(name):
        state[name + ".weight"] = 1 + rand(h, scale=0.1)
        if not rms:
            state[name + ".bias"] = rand(h, scale=0.1)

    state: dict[str, torch.Tensor] = {}
    for i in range(cfg.get("num_layers", 1) if layers is None else layers):
        p = f"{prefix}{i}." if prefix else ""
        norm(p + "input_norm")
        state[p + "attention.qkv.weight"] = rand((heads + 2 * groups) * d, h)
        state[p + "attention.proj.weight"] = rand(h, heads * d)
        norm(p + "post_attention_norm")
        state[p + "mlp.fc1.weight"] = rand(up, h)
        state[p + "mlp.fc2.weight"] = rand(h, f)
        if bias:
            state[p + "attention.qkv.bias"] = rand((heads + 2 * groups) * d)
            state[p + "attention.proj.bias"] = rand(h)
            state[p + "mlp.fc1.bias"] = rand(up)
            state[p + "mlp.fc2.bias"] = rand(h)
    if final_norm:
        norm("final_norm")
    return state


def _norm(cfg, state, name, x):
    h = cfg["hidden_size"]
    eps = cfg.get("norm_epsilon", 1e-5)
    if cfg.get("normalization") == "rmsnorm":
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * state[name + ".weight"]
    return F.layer_norm(x, (h,), state[name + ".weight"], state[name + ".bias"], eps)


def _rotary(x, base):  # x [s, b, n, d]
    s, d = x.shape[0], x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    ang = torch.outer(torch.arange(s, dtype=torch.float32, device=x.device), inv)
    ang = torch.cat([ang, ang], -1).view(s, 1, 1, d).to(x.dtype)
    half = d // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * ang.cos() + rotated * ang.sin()


def attention(cfg, state, p, x):
    s, b, h = x.shape
    heads = cfg["num_attention_heads"]
    groups = cfg.get("num_query_groups") or heads
    d = h // heads
    qkv = F.linear(x, state[p + "qkv.weight"], state.get(p + "qkv.bias"))
    q = qkv[..., : heads * d].reshape(s, b, heads, d)
    k = qkv[..., heads * d : (heads + groups) * d].reshape(s, b, groups, d)
    v = qkv[..., (heads + groups) * d :].reshape(s, b, groups, d)
    if cfg.get("rotary"):
        q, k = _rotary(q, cfg.get("rotary_base", 10000.0)), _rotary(k, cfg.get("rotary_base", 10000.0))
    q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))
    k = k.repeat_interleave(heads // groups, 1)
    v = v.repeat_interleave(heads // groups, 1)
    scale = cfg.get("softmax_scale")
    scores = q @ k.transpose(-2, -1)
    scores = scores / math.sqrt(d) if scale is None else scores * scale
    causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
    probs = scores.masked_fill(causal, float("-inf")).softmax(-1)
    ctx = (probs @ v).permute(2, 0, 1, 3).reshape(s, b, heads * d)
    return F.linear(ctx, state[p + "proj.weight"], state.get(p + "proj.bias"))


def mlp(cfg, state, p, x):
    up = F.linear(x, state[p + "fc1.weight"], state.get(p + "fc1.bias"))
    if cfg.get("activation") == "swiglu":
        f = up.shape[-1] // 2
        act = F.silu(up[..., :f]) * up[..., f:]
    else:
        act = F.gelu(up)
    return F.linear(act, state[p + "fc2.weight"], state.get(p + "fc2.bias"))


def layer(cfg, state, p, x):
    x = x + attention(cfg, state, p + "attention.", _norm(cfg, state, p + "input_norm", x))
    return x + mlp(cfg, state, p + "mlp.", _norm(cfg, state, p + "post_attention_norm", x))


def transformer(cfg, state, x):
    for i in range(cfg.get("num_layers", 1)):
        x = layer(cfg, state, f"layers.{i}.", x)
    return _norm(cfg, state, "final_norm", x)
