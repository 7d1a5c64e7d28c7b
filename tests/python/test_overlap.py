"""Domino layers: numerics against a plain single-process transformer (same weights, sharded)
at TP 1, 2 and 4 over every split, micro-batch count, activation, norm and GQA setting; the
layer classes one by one; dropout under tensor parallelism; lanes; clear errors."""

from __future__ import annotations

import itertools

import pytest

from ranks import assert_all_ok, assert_all_reported, run_ranks

SCHEDULES = (
    [("none", 1, 1)]
    + [("row", mb, 1) for mb in (1, 2, 3, 4)]
    + [("column", 1, cc) for cc in (1, 2, 3, 4)]
    + [("2d", 2, 2), ("2d", 3, 3), ("2d", 4, 2), ("2d", 1, 4)]
)


def matrix() -> list[dict]:
    configs = []
    for index, ((split, mb, cc), activation, norm, gqa) in enumerate(
        itertools.product(SCHEDULES, ("gelu", "swiglu"), ("layernorm", "rmsnorm"), (False, True))
    ):
        configs.append(dict(
            hidden_size=48, num_attention_heads=8, num_query_groups=4 if gqa else 0, num_layers=2,
            activation=activation, normalization=norm, split=split, micro_batches=mb,
            column_chunks=cc, rotary=index % 2 == 0, bias=index % 3 != 0,
            overlap="inter" if (index // 2) % 2 == 0 and split != "none" else "intra",
        ))
    return configs


def failures(reports: list) -> list:
    return [(r["config"], r["worst"]) for r in reports if not r["ok"]]


@pytest.mark.parametrize("tp", [1, 2])
def test_transformer_in_bfloat16_stays_near_the_float32_reference(tp):
    configs = matrix()[::8]  # every schedule; activations and norms alternate
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.numerics_bf16", configs, "cpu",
                                           timeout=600)):
        assert len(reports) == len(configs)
        assert failures(reports) == []


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_transformer_matches_reference_over_the_whole_matrix(tp):
    configs = matrix()
    results = assert_all_ok(run_ranks(tp, "overlap_workers.transformer_numerics", configs, timeout=600))
    for rank, reports in enumerate(results):
        assert len(reports) == len(configs) == 104
        assert failures(reports) == [], f"rank {rank}"


def test_transformer_matches_reference_over_gloo():
    configs = ([c for c in matrix() if c["split"] == "2d"][:2]
               + [c for c in matrix() if c["split"] == "column" and c["column_chunks"] == 2][:2])
    results = assert_all_reported(run_ranks(2, "overlap_workers.transformer_numerics", configs, backend="gloo"))
    for reports in results:
        assert failures(reports) == []


def test_the_comparison_catches_a_missing_reduction():
    configs = [matrix()[5]]
    results = assert_all_ok(run_ranks(2, "overlap_workers.transformer_numerics", configs, True))
    assert all(len(failures(reports)) == 1 for reports in results)


# 2D with several micro-batches takes the plain norm; the part-wise one runs with one micro-batch.
CUT_SCHEDULES = {"2d": dict(split="2d", micro_batches=2, column_chunks=2),
                 "column": dict(split="column", micro_batches=1, column_chunks=2)}


@pytest.mark.parametrize("tp", [1, 2])
@pytest.mark.parametrize("schedule", list(CUT_SCHEDULES))
def test_each_layer_class_matches_its_reference_piece(tp, schedule):
    cfg = dict(hidden_size=48, num_attention_heads=8, num_query_groups=2, activation="swiglu",
               normalization="rmsnorm", rotary=True, **CUT_SCHEDULES[schedule])
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.layer_numerics", cfg)):
        assert set(reports) == {"DominoTransformerLayer", "ShardedAttention", "ParallelMLP",
                                "Column+RowParallelLinear"}
        for name, report in reports.items():
            assert report["ok"], (name, report["worst"])


@pytest.mark.parametrize("tp", [1, 2])
def test_torch_checkpoint_recomputes_dropout_exactly_at_every_split(tp):
    # The recompute draws the masks the forward drew: output, input gradient and parameter
    # gradients bit for bit those of the step without it, wherever two steps without it agree bit
    # for bit. With three or more micro-batches under overlap="inter" at TP > 1 they do not: when
    # the deferred reductions finish decides the order in which micro-batches' contributions to
    # a weight are summed (the last bits). A recompute that does not restore the generator (the
    # control) draws other masks and fails by far more.
    base = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=2,
                hidden_dropout=0.2, attention_dropout=0.2, activation="swiglu", rotary=True)
    cfgs = [dict(base, split="row", micro_batches=3), dict(base, split="column", column_chunks=2),
            dict(base, split="2d", micro_batches=2, column_chunks=2), dict(base, split="none"),
            dict(base, split="row", micro_batches=2, overlap="intra"),
            dict(base, split="row", micro_batches=3, overlap="intra")]
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.recompute_is_exact", cfgs,
                                           timeout=600)):
        assert len(reports) == 2 * 2 * len(cfgs)
        assert all(r["control_differs"] for r in reports), reports
        assert [r for r in reports if not r["activations_exact"]] == []
        assert [r for r in reports if r["plain_repeatable"] and not r["exact"]] == []
        unrepeatable = [r for r in reports if not r["plain_repeatable"]]
        assert all(r["worst_grad"] < 1e-6 and r["config"]["split"] == "row"
                   and r["config"]["micro_batches"] >= 3 and r["config"].get("overlap") != "intra"
                   and r["target"] == "DominoTransformer" for r in unrepeatable), unrepeatable
        if tp == 1:
            assert unrepeatable == []


def test_dropout_is_seeded_consistent_across_ranks_and_independent_of_the_split():
    cfg = dict(hidden_size=48, num_attention_heads=8, num_layers=2, hidden_dropout=0.2,
               attention_dropout=0.2, split="2d", micro_batches=3, column_chunks=2, seed=99)
    for facts in assert_all_ok(run_ranks(2, "overlap_workers.dropout_behaviour", cfg)):
        assert facts == {key: True for key in facts}, facts


def test_reductions_use_the_high_priority_lane_on_domino():
    cfg = dict(hidden_size=48, num_attention_heads=8, num_layers=2, split="2d", micro_batches=2,
               column_chunks=2)
    for counts in assert_all_ok(run_ranks(2, "overlap_workers.lanes_used", cfg)):
        # forward: 2 layers x 2 blocks x 2 micro-batches x 2 column chunks; backward, per
        # column-parallel linear (2 per layer) per micro-batch: its input gradient in one
        # message, as under row split (the norm runs after the sum, its gradients need none)
        assert counts == {"high": 16 + 2 * 2 * 2, "normal": 0, "low": 0}


def test_unshardable_configs_and_bad_inputs_are_named():
    for messages in assert_all_ok(run_ranks(2, "overlap_workers.rejects")):
        assert "num_attention_heads=3" in messages["heads"] and "tensor-parallel size=2" in messages["heads"]
        assert "ffn_hidden_size=7" in messages["ffn"]
        assert "micro_batches=4 exceeds the batch of 3" in messages["micro_batches"]
        assert "[s, b, 48]" in messages["hidden"] and "last size 40" in messages["hidden"]
        assert "split='diagonal'" in messages["split"] and "row, column, 2d" in messages["split"]
        assert "no tensor for parameter" in messages["unsharded"]
        assert messages["attention_hidden"].startswith("ShardedAttention: expects hidden states [s, b, 48]")
        assert messages["mlp_hidden"].startswith("ParallelMLP: expects hidden states [s, b, 48]")


def test_backward_waits_for_a_reduction_only_after_the_other_micro_batches_ran():
    two = assert_all_ok(run_ranks(2, "overlap_workers.backward_order", 2))[0]
    # 2 micro-batches x (qkv, fc1): the first wait comes after both micro-batches' fc1 backward
    assert two.count("ColumnParallelLinearFunction") == two.count("WaitForInputGradient") == 4
    assert two[:3] == ["ColumnParallelLinearFunction"] * 2 + ["WaitForInputGradient"], two
    one = assert_all_ok(run_ranks(2, "overlap_workers.backward_order", 1))[0]
    assert one == ["ColumnParallelLinearFunction"] * 2  # one micro-batch: waits inside, Megatron-style


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("schedule", list(CUT_SCHEDULES))
def test_low_precision_params_run_in_that_dtype_close_to_fp32(dtype, schedule):
    for facts in assert_all_ok(run_ranks(2, "overlap_workers.low_precision", dtype,
                                         CUT_SCHEDULES[schedule])):
        assert facts["dtype"] == f"torch.{dtype}" and facts["param_dtypes"] == [f"torch.{dtype}"]
        assert facts["grads"]
        assert facts["max_error"] <= 0.05 * max(facts["scale"], 1.0), facts


def test_misuse_fails_loudly_and_autocast_and_inference_mode_work():
    for facts in assert_all_ok(run_ranks(2, "overlap_workers.guards")):
        assert "layers.0.mlp.fc1.weight': the unsharded tensor has shape [384, 48], this model's is [192, 48]" \
            in facts["wrong_size_checkpoint"], facts
        assert "no parameter named 'layers.0.attention.qkv.wieght'" in facts["misspelled_name"]
        assert "assign=True is not supported" in facts["assign"]
        assert facts["trains_after_inference"]
        # autocast: backward runs (the linears compute in bf16, the final norm in fp32) and
        # every gradient lands in the parameters' fp32
        assert facts["autocast_output"] == "torch.float32"
        assert facts["autocast_grads"] == ["torch.float32"]


@pytest.mark.parametrize("tp", [1, 2])
def test_the_recompute_option_gives_the_same_step(tp):
    base = dict(hidden_size=48, num_attention_heads=8, num_query_groups=4, num_layers=3,
                hidden_dropout=0.2, attention_dropout=0.2, activation="swiglu", rotary=True)
    cfgs = [dict(base, split="row", micro_batches=2), dict(base, split="2d", micro_batches=2,
                                                          column_chunks=2),
            dict(base, split="none"), dict(base, split="column", column_chunks=2)]
    for reports in assert_all_ok(run_ranks(tp, "overlap_workers.recompute_option_matches", cfgs,
                                           timeout=600)):
        assert len(reports) == len(cfgs)
        # The forward and the input gradient are the same bits; parameter gradients too where
        # two plain steps agree, else within their last bits.
        assert [r for r in reports if not r["activations_exact"]] == [], reports
        assert all(r["exact"] if r["plain_repeatable"] else r["worst_grad"] < 1e-6
                   for r in reports), reports
        # It does recompute: the forward keeps a fraction of what it keeps without.
        assert all(r["saved_fraction"] < 0.25 for r in reports), reports
