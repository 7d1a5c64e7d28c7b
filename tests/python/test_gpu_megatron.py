"""Megatron-Core on CUDA (skipped without a GPU, or without Megatron-Core): a GPTModel with the
Domino spec computes the local spec's loss and every gradient with the same weights, GPT- and
Llama-style, every split, at TP 1 and at TP 2 with and without sequence parallelism (two ranks
sharing one GPU stage through host memory). Both models are built as Megatron-Core builds them on
a GPU (use_cpu_initialization off), so the Domino layers must land on the current device."""

from __future__ import annotations

import pytest
import torch

from ranks import assert_all_ok, run_ranks
from test_megatron import _check

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


@pytest.mark.parametrize("tp", [1, 2])
def test_the_domino_spec_computes_what_the_local_spec_computes_on_gpu(tp):
    results = assert_all_ok(run_ranks(tp, "megatron_workers.against_local_spec", ["gpt", "llama"],
                                      ["row", "column", "2d", "none"], "cuda", timeout=600))
    _check(results)
    for reports in results:
        assert all(r.get("devices", ["cuda"]) == ["cuda"] for r in reports), reports
        if tp > 1:
            assert {"sp=True" in r["case"] for r in reports} == {False, True}
