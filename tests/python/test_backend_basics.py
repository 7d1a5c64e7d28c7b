"""The foundation, seen from Python: registration, all_reduce, handles, init errors, hygiene."""

from __future__ import annotations

import os
import tempfile

import pytest
import torch.distributed as dist

import torch_domino
from ranks import assert_all_ok, assert_all_reported, domino_shm_segments, run_ranks


def test_import_registers_domino_for_cpu_and_cuda():
    assert "domino" in dist.Backend.backend_list
    assert dist.Backend("domino") == "domino"
    assert set(dist.Backend.backend_capability["domino"]) == {"cpu", "cuda"}
    assert torch_domino.BACKEND_NAME == "domino"


@pytest.mark.parametrize("world", [1, 2, 4])
def test_all_reduce_sum(world):
    for value in assert_all_ok(run_ranks(world, "all_reduce_sum")):
        assert value["small"] == [value["expected"]] * 7
        assert value["big_ok"]


@pytest.mark.parametrize("world", [2, 4])
def test_async_op_returns_a_handle_that_waits(world):
    for value in assert_all_ok(run_ranks(world, "async_handle")):
        assert value["waited"] is True
        assert value["completed"] and value["success"]
        assert value["value"] == value["expected"]
        assert value["future"] == [float(world)] * 3
        assert value["result_len"] == 1
        assert value["handle_type"] == "torch_domino._C.Work" and value["is_dist_work"]
        assert value["waited_again"] is True


@pytest.mark.parametrize("world", [1, 2])
def test_a_blocking_op_that_ends_in_the_call_hands_back_no_handle(world):
    for value in assert_all_ok(run_ranks(world, "blocking_handle")):
        assert value["handed"] is None, value  # torch skips wait() on None
        assert value["value"] == value["want"] and value["plain"] == value["plain_want"], value
        assert value["tracked"] == "Work", value
        assert value["released"], value  # the thread's spare Work holds no caller tensor
        assert value["after_handed"] == [True] * 3 and value["after"] == value["after_want"], value
        if world > 1:
            assert value["failed"] == "Work" and value["failure"] == "DistBackendError", value


def test_wait_with_a_timeout_raises_and_the_work_still_finishes():
    first, second = assert_all_ok(run_ranks(2, "wait_with_timeout"))
    assert "did not finish within wait()'s timeout of 300 ms" in first["timed_out"]
    assert "all" in first["timed_out"].lower()  # names the op (ALLREDUCE)
    assert second["timed_out"] == ""
    for facts in (first, second):
        assert facts["value"] == [3.0] * 4 and facts["completed"]


def test_future_matches_gloo():
    domino = assert_all_ok(run_ranks(2, "future_value_shape", backend="domino"))
    gloo = assert_all_reported(run_ranks(2, "future_value_shape", backend="gloo"))
    assert domino == gloo


@pytest.mark.parametrize("spec", ["domino", "cpu:domino,cuda:domino", "cpu:gloo,cuda:domino"])
def test_device_maps(spec, tmp_path):
    init = f"file://{tmp_path}/store"
    values = assert_all_ok(run_ranks(2, "device_map_backends", spec, init, backend="none"))
    for value in values:
        assert value["value"] == 3.0
        assert value["backends"]["cuda"] == "ProcessGroupDomino"
        expected_cpu = "ProcessGroupGloo" if spec.startswith("cpu:gloo") else "ProcessGroupDomino"
        assert value["backends"]["cpu"] == expected_cpu


def test_unknown_variable_is_named_in_a_warning(tmp_path):
    results = run_ranks(2, "all_reduce_sum", env={"DOMINO_NO_SUCH_KNOB": "1"})
    assert_all_ok(results)
    for r in results:
        assert "unknown variable DOMINO_NO_SUCH_KNOB" in r.output


@pytest.mark.parametrize(
    "variable,value,accepted",
    [
        ("DOMINO_ALGO", "fastest", "one plan (flat, hierarchical, leader)"),
        ("DOMINO_ALGO", "flat,leader", "at most one plan"),
        ("DOMINO_COST_INTER", "fast", "'LATENCY_US,GBYTES_PER_S'"),
        ("DOMINO_PRIORITY", "urgent", "high, normal, low"),
        ("DOMINO_SHM_BYTES", "lots", "byte count"),
        ("DOMINO_LOG", "loud", "error, warn, info, debug"),
        ("DOMINO_INTRA_TRANSPORT", "carrier-pigeon", "accepted values: auto, shm, ucx"),
        ("DOMINO_REDUCTION_KERNELS", "sse", "auto, avx512, avx2, generic"),
    ],
)
def test_invalid_value_fails_init_naming_variable_and_accepted_values(variable, value, accepted, tmp_path):
    init = f"file://{tmp_path}/store"
    results = run_ranks(2, "init_expecting_error", init, backend="none", env={variable: value})
    for outcome in assert_all_ok(results):
        assert outcome["raised"] == "ValueError", outcome
        assert variable in outcome["message"] and value in outcome["message"]
        assert accepted in outcome["message"]


def test_mismatch_raises_on_every_rank_and_group_survives():
    for rank, outcome in enumerate(assert_all_ok(run_ranks(3, "mismatched_sizes"))):
        assert outcome["raised"] is not None and outcome["is_runtime_error"], outcome
        assert "ranks disagree" in outcome["message"]
        assert "rank 1: allreduce #1 of 10 x float32 SUM" in outcome["message"]
        assert outcome["completed"] and not outcome["success"]
        assert outcome["future_raised"]
        assert outcome["after"] == [3.0] * 5


@pytest.mark.parametrize("world", [2, 4])
def test_destroy_leaves_nothing_in_dev_shm(world):
    before = set(os.listdir("/dev/shm"))
    listings = assert_all_ok(run_ranks(world, "shm_listing"))
    # Even while the group is alive, its memory has no name anyone could open.
    for listing in listings:
        assert not {n for n in listing if "domino" in n.lower()}
    assert set(os.listdir("/dev/shm")) == before
    assert not domino_shm_segments()
