"""Sequence parallelism in the Domino layers: with sequence_parallel=True each rank holds its
rows of the sequence between blocks, all-gathers before the column-parallel GEMMs and
reduce-scatters after the row-parallel ones, and computes what the model without it computes,
within float rounding, at every split, with dropout and recompute (spawned ranks, domino)."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, run_ranks

GPT = dict(hidden_size=32, num_attention_heads=4, num_layers=2, activation="gelu",
           normalization="layernorm", bias=True)
LLAMA = dict(hidden_size=32, num_attention_heads=8, num_query_groups=4, num_layers=2,
             activation="swiglu", normalization="rmsnorm", bias=False, rotary=True)
SCHEDULES = [dict(split="row", micro_batches=2), dict(split="column", column_chunks=2),
             dict(split="2d", micro_batches=2, column_chunks=2), dict(split="none"),
             dict(split="row", micro_batches=2, overlap="intra")]
TOLERANCE = 1e-5


def _configs(**extra):
    return [{**shape, **schedule, **extra} for shape in (GPT, LLAMA) for schedule in SCHEDULES]


def _check(reports):
    for rank, rank_reports in enumerate(reports):
        for report in rank_reports:
            bad = {k: v for k, v in report["worst"].items() if v > TOLERANCE}
            assert not bad, f"rank {rank}, {report['config']}: {bad}"


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_sequence_parallel_matches_the_whole_sequence_at_every_split(tp):
    _check(assert_all_ok(run_ranks(tp, "sequence_parallel_workers.compare", _configs(),
                                   timeout=600)))


def test_sequence_parallel_with_dropout_drops_what_the_whole_sequence_drops():
    # Replicated masks are drawn for the whole sequence and each rank keeps its rows.
    configs = [{**shape, "split": "row", "hidden_dropout": 0.2, "attention_dropout": 0.1}
               for shape in (GPT, LLAMA)]
    _check(assert_all_ok(run_ranks(2, "sequence_parallel_workers.compare", configs,
                                   "DominoTransformer", True,
                                   timeout=600)))


@pytest.mark.parametrize("make", ["DominoTransformerLayer", "ShardedAttention", "ParallelMLP"])
def test_each_layer_class_takes_sequence_parallel(make):
    configs = [{**LLAMA, "split": "row"}, {**GPT, "split": "column", "column_chunks": 2}]
    _check(assert_all_ok(run_ranks(2, "sequence_parallel_workers.compare", configs, make,
                                   timeout=600)))


def test_the_linears_gather_and_reduce_scatter_along_the_sequence():
    for rank, worst in enumerate(assert_all_ok(run_ranks(2, "sequence_parallel_workers.linear_pair"))):
        bad = {k: v for k, v in worst.items() if v > TOLERANCE}
        assert not bad, f"rank {rank}: {bad}"


def test_recompute_under_sequence_parallel_gives_the_same_step():
    cfg = {**LLAMA, "split": "2d", "micro_batches": 2, "column_chunks": 2, "hidden_dropout": 0.2,
           "attention_dropout": 0.1}
    for rank, report in enumerate(assert_all_ok(run_ranks(2, "sequence_parallel_workers.recompute",
                                                          cfg, timeout=600))):
        assert report["dropout_active"], rank
        assert report["same"], f"rank {rank}: the recomputed step differs"


def test_deferred_input_gradients_are_whole_under_autocast():
    # bf16 compute on fp32 weights: autograd casts each input gradient back to fp32 as it leaves
    # the linear's backward, which must not happen before its deferred reduction has landed.
    for rank, worst in enumerate(assert_all_ok(run_ranks(2, "sequence_parallel_workers.autocast",
                                                         GPT,
                                                         timeout=600))):
        bad = {k: v for k, v in worst.items() if v > 5e-2}
        assert not bad, f"rank {rank}: {bad}"
