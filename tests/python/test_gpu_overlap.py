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
