"""Rank-side bodies of test_layer_recipes.py: the config field softmax_scale (docs/extending.md's
worked example of a new layer config field) reaching the layers, over the world group."""

from __future__ import annotations

import math

import torch

import reference_transformer as ref
from overlap_workers import _compare, _input
from torch_domino import overlap as ov

# A head dimension of 16: 1/sqrt(16) is exact, so the default and that scale given are the same bits.
ATTENTION = dict(hidden_size=64, num_attention_heads=4, num_query_groups=2, rotary=True)


def softmax_scale_reaches_the_layers(rank: int, world: int, scales: list) -> dict:
    """For each scale (None: the default), ShardedAttention and a two-layer DominoTransformer (2d
    split) against the reference computing that scale; and, as the control, against the
    reference computing the default. Then the attention dropout path's facts."""
    reports = []
    for scale in scales:
        cfg = dict(ATTENTION, softmax_scale=scale)
        default = dict(ATTENTION)
        state = ref.full_state(cfg, seed=13, layers=1, prefix="", final_norm=False)
        attention_state = {k[len("attention."):]: v for k, v in state.items()
                           if k.startswith("attention.")}
        for against, reference_cfg in (("scale", cfg), ("default", default)):
            attention = ov.ShardedAttention(ov.TransformerConfig(**cfg))
            attention.load_unsharded(attention_state)
            report = _compare(attention, lambda s, x: ref.attention(reference_cfg, s, "", x),
                              attention_state, _input(cfg))
            reports.append({"layer": "ShardedAttention", "scale": scale, "against": against,
                            **report})
        stack_cfg = dict(cfg, num_layers=2, split="2d", micro_batches=2, column_chunks=2)
        stack_state = ref.full_state(stack_cfg, seed=11)
        model = ov.DominoTransformer(ov.TransformerConfig(**stack_cfg))
        model.load_unsharded(stack_state)
        report = _compare(model, lambda s, x: ref.transformer(stack_cfg, s, x), stack_state,
                          _input(stack_cfg))
        reports.append({"layer": "DominoTransformer", "scale": scale, "against": "scale",
                        **report})
    return {"reports": reports, "dropout": _under_attention_dropout()}


def _under_attention_dropout() -> dict:
    """Training with attention dropout takes the explicit scores path (its own masks): there the
    default and 1/sqrt(head dimension) given are the same bits, and another scale differs."""
    head_dim = ATTENTION["hidden_size"] // ATTENTION["num_attention_heads"]
    x = _input(ATTENTION)

    def run(scale):
        layer = ov.ShardedAttention(ov.TransformerConfig(**ATTENTION, attention_dropout=0.3,
                                                         softmax_scale=scale))
        layer.train()
        torch.manual_seed(21)  # the pass's dropout seed
        return layer(x).detach()

    default = run(None)
    return {"default_is_one_over_sqrt_head_dim": torch.equal(default, run(1 / math.sqrt(head_dim))),
            "another_scale_differs": not torch.allclose(default, run(0.9), atol=1e-4)}


def megatron_softmax_scale(rank: int, world: int, scale: float) -> dict:
    """Megatron-Core's softmax_scale through the Domino spec: not refused, held by the Domino
    layers, and the model computes what Megatron's local spec computes with it (loss and every
    gradient)."""
    import megatron_workers as mw
    from torch_domino.megatron import DominoLayer, get_gpt_layer_domino_spec
    from torch_domino.megatron.config import _MUST_EQUAL

    mw._init(world)
    cfg = mw.config("gpt", world, False, softmax_scale=scale)
    torch.manual_seed(1234)
    local = mw.gpt(cfg, mw.local_spec(cfg), "gpt")
    want_loss, want = mw.step(local)
    domino = mw.gpt(cfg, get_gpt_layer_domino_spec(**mw.SCHEDULES["row"], config=cfg), "gpt")
    missing = domino.load_state_dict(local.state_dict(), strict=True)
    loss, grads = mw.step(domino)
    worst, where = mw._worst(grads, want)
    held = sorted({m.domino_config.softmax_scale for m in domino.modules()
                   if isinstance(m, DominoLayer)})
    return {"loss": loss, "want_loss": want_loss, "grad": worst, "where": where,
            "load": str(missing), "held": held, "must_equal": "softmax_scale" in _MUST_EQUAL}
