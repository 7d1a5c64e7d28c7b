"""Rank-side bodies of the Hugging Face import tests: a transformers model made from a random
init (the same on every rank), imported with torch_domino.overlap.from_hf over the world group,
and compared with the model's own last_hidden_state."""

from __future__ import annotations

import torch

from torch_domino import overlap as ov


def _hf_model(family: str):
    import transformers
    if family.startswith("gpt2"):  # gpt2_unscaled: scores not divided by sqrt(head_dim)
        torch.manual_seed(11)
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_embd=64, n_layer=2, n_head=8, vocab_size=64, n_positions=32,
            scale_attn_weights=family != "gpt2_unscaled"))
        with torch.no_grad():
            for name, p in model.named_parameters():
                if ".ln_" in name and name.endswith("weight"):
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                elif name.endswith(".bias"):
                    p.copy_(0.1 * torch.randn_like(p))
        return model.eval()
    common = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=8,
                  num_key_value_heads=4, vocab_size=64, rms_norm_eps=1e-5)
    if family == "llama":
        config = transformers.LlamaConfig(**common)
        cls = transformers.LlamaForCausalLM
    elif family == "qwen2":
        config = transformers.Qwen2Config(**common)
        cls = transformers.Qwen2ForCausalLM
    else:
        config = transformers.MistralConfig(**common, sliding_window=None)
        cls = transformers.MistralModel
    config.rope_parameters = {"rope_type": "default", "rope_theta": 5000.0}
    torch.manual_seed(11)
    model = cls(config)
    with torch.no_grad():  # norms away from one and biases away from zero, so a swap shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    return model.eval()


def _base(model):
    return getattr(model, "model", None) or getattr(model, "transformer", None) or model


def _decoder_input(base, embeds: torch.Tensor) -> torch.Tensor:
    """What the decoder layers see for inputs_embeds: GPT-2 adds its position embeddings."""
    if hasattr(base, "wpe"):
        return embeds + base.wpe(torch.arange(embeds.shape[1]))
    return embeds


def matches_hf(rank: int, world: int, family: str, schedule: dict) -> dict:
    model = _hf_model(family)
    domino = ov.from_hf(model, **schedule).eval()
    hidden = torch.randn(3, 10, 64, generator=torch.Generator().manual_seed(2))  # [b, s, h]
    with torch.no_grad():
        base = _base(model)
        want = base(inputs_embeds=hidden).last_hidden_state
        x = _decoder_input(base, hidden).transpose(0, 1).contiguous()  # [s, b, h]
        if schedule.get("sequence_parallel"):  # this rank's rows of the sequence, in and out
            rows = x.shape[0] // world
            x = x[rank * rows:(rank + 1) * rows]
            want = want[:, rank * rows:(rank + 1) * rows]
        got = domino(x).transpose(0, 1)
    err = float((got - want).abs().max())
    return {"err": err, "scale": float(want.abs().max()), "heads": domino.config.num_query_groups or domino.config.num_attention_heads}


def refusals(rank: int, world: int) -> dict:
    import transformers
    out = {}
    for key, change in {"act": dict(hidden_act="gelu"), "bias": dict(attention_bias=True),
                        "mlp_bias": dict(mlp_bias=True), "head_dim": dict(head_dim=16),
                        "rope": dict(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                      "rope_theta": 10000.0})}.items():
        config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64,
                                          num_hidden_layers=1, num_attention_heads=4,
                                          vocab_size=16, **change)
        try:
            ov.from_hf(transformers.LlamaModel(config))
            out[key] = ""
        except ValueError as e:
            out[key] = str(e)
    mistral = transformers.MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, vocab_size=16)  # window 4096
    try:
        ov.from_hf(transformers.MistralModel(mistral))
        out["window"] = ""
    except ValueError as e:
        out["window"] = str(e)
    layer_scaled = transformers.GPT2Model(transformers.GPT2Config(
        n_embd=32, n_layer=1, n_head=4, vocab_size=16, n_positions=8,
        scale_attn_by_inverse_layer_idx=True))
    try:
        ov.from_hf(layer_scaled)
        out["layer_scale"] = ""
    except ValueError as e:
        out["layer_scale"] = str(e)
    opt = transformers.OPTModel(transformers.OPTConfig(hidden_size=32, num_hidden_layers=1,
                                                       num_attention_heads=4, ffn_dim=64,
                                                       vocab_size=16, word_embed_proj_dim=32))
    try:
        ov.from_hf(opt)
        out["family"] = ""
    except ValueError as e:
        out["family"] = str(e)
    return out


def round_trip(rank: int, world: int, family: str) -> dict:
    """from_hf, a change to every Domino weight, to_hf_state_dict into a fresh model of the
    family: the fresh model computes what the changed Domino model computes."""
    model = _hf_model(family)
    domino = ov.from_hf(model).eval()
    with torch.no_grad():  # the same change on every rank: this rank's slice of a full tensor
        for index, (name, param) in enumerate(domino.named_parameters()):
            shape = list(param.shape)
            layouts = {n: (d, s) for n, d, s, _ in domino._impl.shard_layouts()}
            dim, segments = layouts[name]
            if dim >= 0:
                shape[dim] = sum(segments)
            bump = torch.randn(shape, generator=torch.Generator().manual_seed(100 + index))
            param.add_(0.05 * domino.shard_of(name, bump))
    state = ov.to_hf_state_dict(domino, family)
    fresh = _hf_model(family)
    base = _base(fresh)
    missing, unexpected = base.load_state_dict(state, strict=False)
    hidden = torch.randn(2, 7, 64, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = domino(_decoder_input(base, hidden).transpose(0, 1).contiguous()).transpose(0, 1)
        got = base(inputs_embeds=hidden).last_hidden_state
    return {"err": float((got - want).abs().max()), "scale": float(want.abs().max()),
            "missing": sorted(missing), "unexpected": sorted(unexpected)}
