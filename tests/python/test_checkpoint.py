"""Domino layers through torch.distributed.checkpoint: torch_domino.overlap.sharded_state_dict
saved at one tensor-parallel size and split, loaded at another, every parameter of every rank
bit for bit its slice of the weights that were saved (spawned ranks, the domino backend)."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, run_ranks

# A different schedule on the loading side: weights do not depend on it.
OTHER_SCHEDULE = {"split": "2d", "micro_batches": 2, "column_chunks": 2, "overlap": "intra"}


@pytest.mark.parametrize("save_tp,load_tp,schedule", [
    (2, 2, {}), (2, 1, OTHER_SCHEDULE), (1, 2, OTHER_SCHEDULE), (2, 4, {})])
def test_a_checkpoint_loads_exactly_at_any_tensor_parallel_size(tmp_path, save_tp, load_tp, schedule):
    path = str(tmp_path / "checkpoint")
    saved = assert_all_ok(run_ranks(save_tp, "checkpoint_workers.save", path, {}, 7, timeout=300))
    loaded = assert_all_ok(run_ranks(load_tp, "checkpoint_workers.load", path, schedule, 7,
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
