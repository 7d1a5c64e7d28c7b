"""The whole c10d surface x every dtype x world sizes 1 to 8 against local references."""

import pytest

from ranks import assert_all_ok, run_ranks


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 6, 7, 8])
def test_every_op_and_dtype_matches_a_local_reference(world):
    for rank, failures in enumerate(assert_all_ok(run_ranks(world, "surface", timeout=600))):
        assert failures == [], f"rank {rank}: {len(failures)} failures, first: {failures[:5]}"


@pytest.mark.parametrize("world", [2, 3])
def test_every_op_through_the_segment_when_single_copy_is_off(world):
    """Large messages then take the chunked shared-memory paths instead of direct reads."""
    results = run_ranks(world, "surface", timeout=600, env={"DOMINO_SINGLE_COPY": "off"})
    for rank, failures in enumerate(assert_all_ok(results)):
        assert failures == [], f"rank {rank}: {failures[:5]}"


def test_overlapping_subgroups_alive_at_once():
    for rank, failures in enumerate(assert_all_ok(run_ranks(4, "subgroups", timeout=600))):
        assert failures == [], f"rank {rank}: {failures[:5]}"


@pytest.mark.parametrize("world", [2, 4])
def test_collectives_from_several_threads(world):
    for rank, failures in enumerate(assert_all_ok(run_ranks(world, "threads"))):
        assert failures == [], f"rank {rank}: {failures[:5]}"
