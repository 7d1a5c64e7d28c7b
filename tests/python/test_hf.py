"""Hugging Face models in: torch_domino.overlap.from_hf on transformers Llama, Mistral and Qwen2 models
(a random init, no hub access) gives their last_hidden_state at TP 1, 2 and 4, over several
schedules; what it cannot reproduce is refused by name."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, run_ranks

pytest.importorskip("transformers")


@pytest.mark.parametrize("family,tp,schedule", [
    ("llama", 1, {}), ("llama", 2, {"split": "2d", "micro_batches": 3, "column_chunks": 2}),
    ("llama", 4, {"split": "none"}), ("mistral", 2, {"split": "row", "micro_batches": 2}),
    ("qwen2", 1, {}), ("qwen2", 2, {"split": "column", "column_chunks": 2}),
    ("gpt2", 1, {}), ("gpt2", 2, {"split": "2d", "micro_batches": 2, "column_chunks": 2}),
    ("gpt2", 4, {}), ("llama", 2, {"split": "row", "sequence_parallel": True}),
    ("gpt2", 2, {"split": "column", "column_chunks": 2, "sequence_parallel": True}),
    ("gpt2_unscaled", 2, {"split": "2d", "micro_batches": 2})])
def test_from_hf_computes_the_models_last_hidden_state(family, tp, schedule):
    for rank, report in enumerate(assert_all_ok(run_ranks(tp, "hf_workers.matches_hf", family,
                                                          schedule, timeout=300))):
        # The model's key/value heads became query groups (GPT-2 has none: all 8 heads).
        assert report["heads"] == (8 if family.startswith("gpt2") else 4)
        assert report["err"] <= 1e-5 * max(report["scale"], 1.0), (rank, report)


def test_what_from_hf_cannot_reproduce_is_refused_by_name():
    report = assert_all_ok(run_ranks(1, "hf_workers.refusals"))[0]
    assert "hidden_act='gelu'" in report["act"], report
    assert "projection biases" in report["bias"] and "projection biases" in report["mlp_bias"], report
    assert "head_dim=16" in report["head_dim"], report
    assert "sliding attention window (4096 tokens)" in report["window"], report
    assert "rope_type='linear'" in report["rope"], report
    assert "not a supported family" in report["family"] and "(opt)" in report["family"], report
    assert "scale_attn_by_inverse_layer_idx=True" in report["layer_scale"], report


@pytest.mark.parametrize("family,tp", [("llama", 2), ("qwen2", 2), ("llama", 1), ("gpt2", 2)])
def test_to_hf_state_dict_gathers_a_model_hugging_face_loads(family, tp):
    for rank, report in enumerate(assert_all_ok(run_ranks(tp, "hf_workers.round_trip", family,
                                                          timeout=300))):
        embeddings = ["wpe.weight", "wte.weight"] if family == "gpt2" else ["embed_tokens.weight"]
        assert report["unexpected"] == [] and report["missing"] == embeddings, report
        assert report["err"] <= 1e-5 * max(report["scale"], 1.0), (rank, report)
