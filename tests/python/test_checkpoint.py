"""Domino layers through torch.distributed.checkpoint the way every trainer calls it:
``dcp.save(model.state_dict())`` and the ``torch.distributed.checkpoint.state_dict`` helpers,
saved at one tensor-parallel size and split, loaded at another, every parameter (and AdamW moment)
of every rank bit for bit its slice of what was saved (spawned ranks, the domino backend)."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, run_ranks

# A different schedule on the loading side, sequence parallelism included: weights do not
# depend on it.
OTHER_SCHEDULE = {"split": "2d", "micro_batches": 2, "column_chunks": 2, "overlap": "intra",
                  "sequence_parallel": True}


@pytest.mark.parametrize("save_tp,load_tp,schedule,how", [
    (2, 2, {}, "load"), (2, 1, OTHER_SCHEDULE, "load_with_helpers"),
    (1, 2, OTHER_SCHEDULE, "load"), (2, 4, {}, "load_with_helpers")])
def test_a_checkpoint_loads_exactly_at_any_tensor_parallel_size(tmp_path, save_tp, load_tp,
                                                                schedule, how):
    # Saved by dcp.save(model.state_dict()); loaded by dcp.load into model.state_dict() and
    # load_state_dict, or through get/set_model_state_dict (and their full_state_dict form).
    path = str(tmp_path / "checkpoint")
    saved = assert_all_ok(run_ranks(save_tp, "checkpoint_workers.save", path, {}, 7, timeout=300))
    loaded = assert_all_ok(run_ranks(load_tp, f"checkpoint_workers.{how}", path, schedule, 7,
                                     timeout=300))
    for rank, report in enumerate(loaded):
        assert report["wrong"] == [], f"rank {rank}: {report['wrong']}"
        assert report["checked"] > 0 and report["finite"]
        # One set of keys at every tensor-parallel size: fused blocks are entries of their own.
        assert report["keys"] == saved[0]["keys"]
    keys = set(saved[0]["keys"])
    for block in ("attention.qkv.q.weight", "attention.qkv.k.weight", "attention.qkv.v.bias",
                  "mlp.fc1.gate.weight", "mlp.fc1.up.bias", "attention.proj.weight"):
        assert f"layers.0.{block}" in keys
    assert "layers.0.attention.qkv.weight" not in keys
    if save_tp > 1:  # the sharded weights are DTensors; norms and row-parallel biases are not
        sharded = set(saved[0]["sharded"])
        assert "layers.1.mlp.fc2.weight" in sharded and "layers.1.attention.qkv.k.weight" in sharded
        assert "layers.1.mlp.fc2.bias" not in sharded and "final_norm.weight" not in sharded


def test_adamw_state_reshards_and_comes_back_bit_for_bit(tmp_path):
    # Trained 3 steps at TP 2, loaded at TP 1 (another schedule) and saved there, loaded at TP 2
    # again: every weight and AdamW moment of every rank as it was, the hyperparameters too.
    first, second = str(tmp_path / "tp2"), str(tmp_path / "tp1")
    trained = assert_all_ok(run_ranks(2, "checkpoint_workers.train_and_save", first, 7, 3,
                                      timeout=300))
    at_one = assert_all_ok(run_ranks(1, "checkpoint_workers.load_and_save", first, second,
                                     OTHER_SCHEDULE, timeout=300))[0]
    assert at_one["steps"] == [3.0] and at_one["lr"] == 1e-2 and at_one["weight_decay"] == 0.1
    assert at_one["finite"]
    back = assert_all_ok(run_ranks(2, "checkpoint_workers.load_and_save", second, None, {},
                                   timeout=300))
    for rank in range(2):
        assert back[rank]["state"] == trained[rank], f"rank {rank}"
        assert back[rank]["steps"] == [3.0] and back[rank]["finite"]
    assert any(":exp_avg_sq" in k for k in trained[0])
    at_four = assert_all_ok(run_ranks(4, "checkpoint_workers.load_and_save", first, None, {},
                                      timeout=300))
    for report in at_four:
        assert report["steps"] == [3.0] and report["lr"] == 1e-2 and report["finite"]


def test_a_trainers_model_over_data_and_tensor_parallel_groups_loads_whole(tmp_path):
    # Two data-parallel replicas of TP pairs, the Domino layers inside a model with a linear and a
    # buffer of its own: loaded on one rank (TP 1) and on four (TP 4), every tensor exact.
    path = str(tmp_path / "checkpoint")
    saved = assert_all_ok(run_ranks(4, "checkpoint_workers.save_data_and_tensor_parallel", path, 7,
                                    timeout=300))
    assert "body.layers.0.attention.qkv.q.weight" in saved[0] and "embed.weight" in saved[0]
    assert "scale" in saved[0]
    for world in (1, 4):
        for rank, report in enumerate(assert_all_ok(run_ranks(
                world, "checkpoint_workers.load_user_model", path, 7, timeout=300))):
            assert report["wrong"] == [], f"TP {world} rank {rank}: {report['wrong']}"
            assert report["keys"] == saved[0]


def test_per_rank_files_of_earlier_releases_still_load(tmp_path):
    # torch.save of each rank's plain slices (model and AdamW, as state_dict() gave them before
    # it gave DTensors), loaded by load_state_dict into a fresh model and a stepped optimizer.
    saved = assert_all_ok(run_ranks(2, "checkpoint_workers.legacy_save", str(tmp_path), 7,
                                    timeout=300))
    loaded = assert_all_ok(run_ranks(2, "checkpoint_workers.legacy_load", str(tmp_path),
                                     timeout=300))
    for rank in range(2):
        assert loaded[rank] == saved[rank], f"rank {rank}"
    assert any(":exp_avg" in k for k in saved[0])


def test_an_optimizer_with_state_of_other_shapes_reloads_it():
    for report in assert_all_ok(run_ranks(2, "checkpoint_workers.factored_optimizer")):
        assert report["same"]


def test_holders_tied_weights_and_wrong_shapes():
    report = assert_all_ok(run_ranks(2, "checkpoint_workers.refusals"))[0]
    # A part of a Domino layer saves its own weights whole too.
    assert report["holder"]["0.mlp.fc2.weight"] == "DTensor", report["holder"]
    assert report["holder"]["0.attention.qkv.q.weight"] == "DTensor"
    assert report["holder"]["0.input_norm.weight"] == "Tensor"
    assert "'head.weight' is the Domino parameter 'body.layers.0.mlp.fc2.weight'" in report["tied"], report
    assert "'layers.1.mlp.fc2.weight' has shape (3, 3), but tensor-parallel rank 0 of 2 holds" in \
        report["shape"], report["shape"]


# A fused qkv weight (its bias trains on), SwiGLU's fused fc1 weight and bias, a fused bias alone
# (its weight trains on), a row-parallel sharded weight and a replicated norm.
FROZEN = ["layers.0.attention.qkv.weight", "layers.0.mlp.fc1.weight", "layers.0.mlp.fc1.bias",
          "layers.1.mlp.fc1.bias", "layers.1.mlp.fc2.weight", "final_norm.weight"]
LEFT_OUT = {"layers.0.attention.qkv.q.weight", "layers.0.attention.qkv.k.weight",
            "layers.0.attention.qkv.v.weight", "layers.0.mlp.fc1.gate.weight",
            "layers.0.mlp.fc1.up.weight", "layers.0.mlp.fc1.gate.bias", "layers.0.mlp.fc1.up.bias",
            "layers.1.mlp.fc1.gate.bias", "layers.1.mlp.fc1.up.bias", "layers.1.mlp.fc2.weight",
            "final_norm.weight"}


def test_frozen_parameters_are_left_out_and_the_trainable_ones_reload(tmp_path):
    # get_model_state_dict(ignore_frozen_params=True) at TP 2: every frozen parameter's entries
    # are gone (each block of a fused one), every trainable one's are there, decided per
    # parameter. Saved, then loaded by set_model_state_dict(strict=False) at TP 2 and 1, and the
    # whole form into fresh models: the trainable parameters bit for bit, the frozen ones as the
    # fresh model had them.
    path = str(tmp_path / "checkpoint")
    saved = assert_all_ok(run_ranks(2, "checkpoint_workers.save_without_frozen", path, FROZEN, 7,
                                    timeout=300))
    every = set(saved[0]["every_key"])
    assert LEFT_OUT <= every, sorted(LEFT_OUT - every)
    assert {"layers.0.attention.qkv.q.bias", "layers.1.mlp.fc1.gate.weight"} <= every - LEFT_OUT
    for rank, report in enumerate(saved):
        assert set(report["keys"]) == every - LEFT_OUT, f"rank {rank}"
        assert set(report["whole_keys"]) == every - LEFT_OUT, f"rank {rank}"
        assert report["wrong"] == [], f"rank {rank}: {report['wrong']}"
    for world in (2, 1):
        loaded = assert_all_ok(run_ranks(world, "checkpoint_workers.load_without_frozen", path,
                                         FROZEN, 7, timeout=300))
        for rank, report in enumerate(loaded):
            assert report["wrong"] == [], f"TP {world} rank {rank}: {report['wrong']}"
            assert report["keys"] == saved[0]["keys"]
            assert report["missing"] == sorted(FROZEN) and report["unexpected"] == []
            assert report["finite"]
