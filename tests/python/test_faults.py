"""Bad input and faults: every one raises a clear error on every surviving rank, in time."""

from __future__ import annotations

import os
import threading

import pytest

from ranks import assert_all_ok, domino_shm_segments, run_ranks


@pytest.mark.parametrize(
    "kind,needle",
    [
        ("size", "rank 1: allreduce #1 of 9 x float32 SUM"),
        ("dtype", "rank 1: allreduce #1 of 8 x float64 SUM"),
        ("op", "rank 1: allreduce #1 of 8 x float32 MAX"),
        ("collective", "rank 1: broadcast #1 of 8 x float32 root 0"),
    ],
)
def test_mismatched_collectives_raise_on_every_rank(kind, needle):
    for outcome in assert_all_ok(run_ranks(3, "mismatch", kind)):
        assert outcome["runtime"], outcome
        assert "ranks disagree on the collective" in outcome["message"]
        assert needle in outcome["message"], outcome["message"]
        assert "on group '" in outcome["message"] and "global ranks 0,1,2" in outcome["message"]
        assert outcome["after"] == [3.0] * 3  # no wrong result, and the group still works


def test_a_rank_killed_mid_collective_is_named_by_the_survivors():
    results = run_ranks(3, "killed_mid_collective", kill_after_s={2: 4.0}, group_timeout_s=60)
    assert results[2].returncode == -9  # really SIGKILLed
    for r in results[:2]:
        assert r.ok, r.output[-3000:]
        outcome = r.value
        assert outcome["runtime"], outcome
        assert "rank(s) 2" in outcome["message"] or "rank 2" in outcome["message"], outcome["message"]
        assert "exited" in outcome["message"] or "another rank failed" in outcome["message"]
    assert not domino_shm_segments()


def test_a_rank_that_never_calls_is_named_within_the_timeout():
    results = run_ranks(3, "never_arrives", group_timeout_s=3)
    for outcome in assert_all_ok(results)[:2]:
        assert outcome["runtime"], outcome
        assert "rank(s) 2" in outcome["message"], outcome["message"]
        assert "never reached it" in outcome["message"] or "another rank failed" in outcome["message"]
        assert outcome["seconds"] < 6, outcome


def test_unsupported_dtype_and_op_fail_before_any_communication():
    values = assert_all_ok(run_ranks(2, "unsupported_combination"))
    first = values[0]
    assert first["runtime"] and "bitwise BXOR is undefined for floating type float32" in first["message"]
    assert "AVG of int32 would truncate" in first["avg_int"]
    assert "UInt32 cannot be reduced" in first["uint32"]
    assert all(v["after"] == [2.0] * 3 for v in values)


def test_segments_are_private_memfds_never_named_in_dev_shm():
    for listing in assert_all_ok(run_ranks(2, "segment_permissions")):
        assert listing["segments"], "expected the group's memfd segment to be mapped"
        assert all(s["mode"] == "0o600" for s in listing["segments"]), listing
        assert listing["dev_shm"] == []


def test_two_jobs_on_one_host_never_mix():
    results = {}

    def job(offset: float) -> None:
        results[offset] = run_ranks(2, "tagged_sum", offset)

    threads = [threading.Thread(target=job, args=(o,)) for o in (0.0, 100.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert assert_all_ok(results[0.0]) == [1.0, 1.0]
    assert assert_all_ok(results[100.0]) == [201.0, 201.0]
