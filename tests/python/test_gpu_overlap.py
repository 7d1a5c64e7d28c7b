"""Domino layers on CUDA (skipped without a GPU): numerics against the plain reference on the
device, at TP=1 and with 2 ranks sharing one GPU over the domino backend (host-staged), in
float32 and in bfloat16 against the float32 reference (overlap_workers.BF16_TOLERANCE)."""

from __future__ import annotations

import pytest
import torch

from ranks import assert_all_ok, run_ranks
from test_overlap import failures, matrix

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


@pytest.mark.parametrize("tp", [1, 2])
def test_layers_match_the_reference_on_gpu(tp):
    configs = matrix()[::8]  # every schedule, activations and norms alternate
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.gpu_numerics", configs, timeout=600)):
        assert len(reports) == len(configs)
        assert failures(reports) == []


@pytest.mark.parametrize("tp", [1, 2])
def test_layers_in_bfloat16_stay_near_the_float32_reference_on_gpu(tp):
    configs = matrix()[::8]
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.numerics_bf16", configs, "cuda",
                                           timeout=600)):
        assert len(reports) == len(configs)
        assert failures(reports) == []


@pytest.mark.parametrize("tp", [1, 2])
def test_torch_checkpoint_recomputes_dropout_exactly_on_gpu(tp):
    # test_overlap's recompute check on the device: the recompute restores the CUDA generator
    # and draws the masks the forward drew, at every split, dropout on.
    base = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=2,
                hidden_dropout=0.2, attention_dropout=0.2, activation="swiglu", rotary=True)
    cfgs = [dict(base, split="row", micro_batches=2), dict(base, split="column", column_chunks=2),
            dict(base, split="2d", micro_batches=2, column_chunks=2), dict(base, split="none"),
            dict(base, split="row", micro_batches=3, overlap="intra")]
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.recompute_is_exact", cfgs, "cuda",
                                           timeout=600)):
        assert len(reports) == 2 * 2 * len(cfgs)
        assert all(r["control_differs"] for r in reports), reports
        assert [r for r in reports if not r["activations_exact"]] == []
        assert [r for r in reports if r["plain_repeatable"] and not r["exact"]] == []
        # Where two plain steps differ in their last bits (the order deferred reductions land
        # in), the recompute stays as close.
        assert all(r["worst_grad"] < 1e-6 for r in reports if not r["plain_repeatable"]), reports
