"""dist.shrink_group and abort() on domino: the remaining ranks build a group without the ones
left out (alive or SIGKILLed), on one host and across simulated hosts, for the default group and
sub-groups; c10d's abort() ends work in flight on every rank."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, domino_shm_segments, run_ranks
from test_multihost import LAYOUTS, host_env


def test_the_remaining_ranks_shrink_the_default_group_and_run_every_op():
    values = assert_all_ok(run_ranks(3, "shrink_workers.healthy"))
    assert values[2] == {"left": True}
    for rank, value in enumerate(values[:2]):
        assert value == {"rank": rank, "world": 2, "is_default": True, "failures": []}, value


# three-hosts: the rank left out hears of the end over UCX (the others' notice), not at its timeout.
@pytest.mark.parametrize("layout", [None, "three-hosts"])
def test_a_rank_left_out_that_calls_the_old_group_is_told(layout):
    rank_env = host_env(["a", "b", "c"]) if layout else None
    values = assert_all_ok(run_ranks(3, "shrink_workers.excluded_calls_old_group",
                                     group_timeout_s=60, rank_env=rank_env))
    assert values[0]["failures"] == [] and values[1]["failures"] == []
    error = values[2]["error"]
    assert "shrink_group" in error, error
    assert values[2]["seconds"] < 20, values[2]


# interleaved: the survivors sit on both simulated hosts, so they reach each other over UCX after
# the old group's endpoints were torn down.
@pytest.mark.parametrize("world,victims,layout",
                         [(4, [3], None), (4, [2, 3], "2x2"), (4, [3], "interleaved")],
                         ids=["one-host", "a-whole-host-of-2x2", "one-rank-of-interleaved-hosts"])
def test_survivors_of_a_sigkill_shrink_and_go_on(world, victims, layout):
    before = domino_shm_segments()
    rank_env = host_env(LAYOUTS[layout]) if layout else None
    results = run_ranks(world, "shrink_workers.after_kill", victims, group_timeout_s=20,
                        rank_env=rank_env, timeout=150)
    for v in victims:
        assert results[v].returncode == -9, results[v].output[-2000:]
    survivors = [r for r in results if r.rank not in victims]
    for r in survivors:
        assert r.ok, r.output[-4000:]
        value = r.value
        assert value["error"], value
        assert value["sum_ok"] and value["world"] == world - len(victims), value
        assert value["failures"] == [], value
        assert value["recovered_s"] < 10, value
        # Over UCX too (the 2x2 case) the death is seen, not left to the 20 s group timeout.
        assert value["failed_after_s"] < 5, value
    assert domino_shm_segments() == before


def test_a_sub_group_shrinks_and_the_default_group_stays():
    values = assert_all_ok(run_ranks(4, "shrink_workers.sub_group"))
    for rank in (0, 2):
        assert values[rank]["ranks"] == [0, 2] and values[rank]["failures"] == [], values[rank]
    for value in values:
        assert value["default_failures"] == [], value


def test_shrinking_one_by_one_leaks_no_thread_or_descriptor():
    values = assert_all_ok(run_ranks(6, "shrink_workers.one_by_one", timeout=240))
    for value in values[:4]:
        assert value["failures"] == [], value
        (threads0, fds0, _), (threads1, fds1, _), (threads2, fds2, _) = value["counts"]
        # Each shrink replaces a group by a smaller one: nothing of the old one stays (each of its
        # lanes had a shared segment, one descriptor each).
        assert threads2 <= threads1 <= threads0, value["counts"]
        assert fds2 <= fds1 <= fds0, value["counts"]


# three-hosts: every rank on a simulated host of its own, so the abort reaches the others over UCX.
@pytest.mark.parametrize("layout", [None, "three-hosts"])
def test_abort_ends_work_in_flight_on_every_rank_and_later_ops_name_it(layout):
    rank_env = host_env(["a", "b", "c"]) if layout else None
    values = assert_all_ok(run_ranks(3, "shrink_workers.abort_in_flight", group_timeout_s=60,
                                     rank_env=rank_env))
    for value in values[:2]:
        # Rank 0 aborts 1 s in; rank 2 stays away for 15 s, so nothing else ends the wait.
        assert "ended the group's communication" in value["error"], value
        assert value["seconds"] < 4, value
        assert "abort()" in value["later"], value  # refused, naming the abort


def test_groups_made_after_a_default_shrink_work_though_c10d_reuses_their_names():
    values = assert_all_ok(run_ranks(3, "shrink_workers.new_groups_after_a_default_shrink",
                                     group_timeout_s=60))
    assert values[2] == {"left": True}
    for value in values[:2]:
        assert value["before_failures"] == value["after_failures"] == [], value
        assert value["again_failures"] == value["default_failures"] == [], value
