"""Megatron-Core users: a GPTModel built with torch_domino.megatron.get_gpt_layer_domino_spec
computes what the same model with Megatron-Core's local spec computes (loss, every gradient)
with the same weights, a GPT-style and a Llama-style config, every split, with and without
sequence parallelism, at TP 1, 2 and 4; Megatron state dicts go in and out; its
sharded_state_dict saves and reshards through megatron.core.dist_checkpointing; Megatron's
full-layer recompute gives the same step bit for bit. Real
Megatron-Core 0.16.1 on CPU over the domino backend (and gloo, where named)."""

from __future__ import annotations

import json

import pytest

from ranks import assert_all_ok, run_ranks

pytest.importorskip("megatron.core")
import torch  # noqa: E402

# Megatron-Core adapted to the CPU (torch_domino.megatron.cpu) refuses a machine with CUDA, where
# Megatron-Core runs on the device: test_gpu_megatron.py checks the spec there.
pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="CUDA is available: test_gpu_megatron.py runs these there")

TOLERANCE = 1e-5


def _check(results):
    for rank, reports in enumerate(results):
        for report in reports:
            case = report["case"]
            assert abs(report["loss"] - report["want_loss"]) <= TOLERANCE * abs(report["want_loss"]), \
                f"rank {rank}, {case}: loss {report['loss']} against {report['want_loss']}"
            assert report["grad"] <= TOLERANCE, \
                f"rank {rank}, {case}: gradient of {report['where']} off by {report['grad']:.2e}"
            assert report["load"] in ("", "<All keys matched successfully>"), report["load"]


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_the_domino_spec_computes_what_the_local_spec_computes(tp):
    _check(assert_all_ok(run_ranks(tp, "megatron_workers.against_local_spec", ["gpt", "llama"],
                                   ["row", "column", "2d", "none"], timeout=900)))


def test_it_runs_over_the_tensor_parallel_group_megatron_made_on_gloo():
    _check(assert_all_ok(run_ranks(2, "megatron_workers.against_local_spec", ["llama"], ["row"],
                                   backend="gloo", timeout=900)))


@pytest.mark.parametrize("tp", [1, 2])
def test_full_recompute_uniform_and_block_gives_the_same_step_bit_for_bit(tp):
    # Megatron's full-layer recompute (its reentrant checkpoint around each layer) against the
    # same model without it, dropout on, at TP 2 with and without sequence parallelism: the same
    # loss and every gradient, bit for bit, as with the Domino layers' own recompute (Megatron's
    # checkpoint restores the CPU generator the layer draws its dropout seed from). Two steps
    # without recompute agree bit for bit here (overlap="intra", two micro-batches).
    for reports in assert_all_ok(run_ranks(tp, "megatron_workers.full_recompute", ["gpt", "llama"],
                                           ["uniform", "block"], timeout=600)):
        assert len(reports) == (4 if tp == 1 else 8)
        for report in reports:
            assert report["plain_repeatable"], report
            assert report["exact"], report
            # It does recompute: one layer per checkpoint, so "uniform" runs both layers' forward
            # twice, "block" (recompute_num_layers=1) the first layer's only.
            assert report["plain_calls"] == [1, 1], report
            assert report["calls"] == ([2, 2] if "uniform" in report["case"] else [2, 1]), report
            # The control: a checkpoint that does not restore the generators recomputes with
            # other dropout masks, and the gradients are far off.
            assert report["unrestored_grad"] > 0.1, report


def test_a_config_the_layer_cannot_compute_is_refused_when_the_spec_is_built():
    said = assert_all_ok(run_ranks(1, "megatron_workers.refusals"))[0]
    assert "TransformerConfig.qk_layernorm=True" in said["qk_layernorm"], said
    assert "TransformerConfig.kv_channels=8" in said["kv_channels"], said
    assert "activation_func" in said["activation"] and "relu" in said["activation"], said
    assert "overlap='inter'" in said["inter"] and "TransformerBlock" in said["inter"], said


def test_every_field_the_layer_refuses_unless_equal_is_one_megatron_has():
    # config.py skips a field the installed release lacks; a misspelt one would never be checked.
    import dataclasses

    from megatron.core.transformer import TransformerConfig

    from torch_domino.megatron.config import _MUST_EQUAL
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    assert sorted(set(_MUST_EQUAL) - fields) == []


@pytest.mark.parametrize("saved_by,loaded_by", [("domino", "domino"), ("local", "domino"),
                                                ("domino", "local")])
def test_dist_checkpointing_saves_and_reshards_across_specs(tmp_path, saved_by, loaded_by):
    # Saved at TP 2 with sequence parallelism, loaded at TP 1: the same logits.
    path = tmp_path / "checkpoint"
    path.mkdir()  # dist_checkpointing saves into an existing, empty folder
    path = str(path)
    saved = assert_all_ok(run_ranks(2, "megatron_workers.dist_checkpoint_save", path, "llama",
                                    True, saved_by == "domino", timeout=900))
    loaded = assert_all_ok(run_ranks(1, "megatron_workers.dist_checkpoint_load", path, "llama",
                                     loaded_by == "domino", timeout=900))
    want, got = saved[0], loaded[0]
    worst = max(abs(a - b) for row_w, row_g in zip(want, got) for vw, vg in zip(row_w, row_g)
                for a, b in zip(vw, vg))
    assert worst < 1e-4, f"logits off by {worst}: {json.dumps(got)[:200]}"
