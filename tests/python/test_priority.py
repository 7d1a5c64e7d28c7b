"""Priority lanes and handle scopes on CPU (the GPU checks live in tests/gpu/)."""

from __future__ import annotations

import pytest

import torch_domino
from ranks import assert_all_ok, run_ranks


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("warm", [True, False])
def test_high_priority_overtakes_a_large_low_priority_all_reduce(world, warm):
    for value in assert_all_ok(run_ranks(world, "overtake", warm)):
        assert value["order"] == ["high", "low"], value
        assert value["big_ok"] and value["small_ok"]


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_that_cross_lane_order_do_not_deadlock(world):
    for value in assert_all_ok(run_ranks(world, "crossed", timeout=120)):
        assert value["a"] == value["want_a"] and value["b"] == value["want_b"]


def test_scope_waits_for_dropped_handles_on_exit():
    for value in assert_all_ok(run_ranks(2, "scope_waits_on_exit")):
        assert value["inside"] == 3
        assert value["values"] == value["want"]


def test_scope_raises_the_first_error_and_the_group_survives():
    for value in assert_all_ok(run_ranks(2, "scope_raises_first_error")):
        assert value["raised"] and "ranks disagree" in value["raised"]
        assert value["after"] == [2.0, 2.0]


def test_scopes_nest():
    for value in assert_all_ok(run_ranks(2, "scopes_nest")):
        assert value == {"inner_count": 1, "outer_count": 1, "inner_done": True, "outer_done": True}


def test_exception_in_the_block_still_waits_and_propagates():
    for value in assert_all_ok(run_ranks(2, "scope_waits_despite_exception")):
        assert value["propagated"] == "'user code failed'"
        assert value["done"]


def test_priority_rejects_unknown_levels():
    with pytest.raises(ValueError, match="accepted values: high, normal, low"):
        with torch_domino.priority("urgent"):
            pass


def test_priority_is_thread_local_and_nests():
    import threading

    from torch_domino import _C

    assert _C._current_priority() == ""
    with torch_domino.priority("low"):
        with torch_domino.priority("high"):
            assert _C._current_priority() == "high"
            seen = []
            t = threading.Thread(target=lambda: seen.append(_C._current_priority()))
            t.start()
            t.join()
            assert seen == [""]
        assert _C._current_priority() == "low"
    assert _C._current_priority() == ""


def test_group_default_lane_comes_from_options(tmp_path):
    init = f"file://{tmp_path}/store"
    for value in assert_all_ok(run_ranks(2, "group_default_lane", init, backend="none")):
        assert value == {"lane": "low", "value": 2.0}


def test_group_default_lane_comes_from_the_environment():
    values = assert_all_ok(run_ranks(2, "topology_view", env={"DOMINO_PRIORITY": "high"}))
    assert all(v["default_lane"] == "high" for v in values)
