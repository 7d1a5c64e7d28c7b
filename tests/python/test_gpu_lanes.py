"""The CUDA path of the backend (skipped without a GPU; tests/gpu/run.sh runs these on a GPU
machine): comm stream priorities per lane, waits that block the caller's stream and not the host,
NCCL at world size 1, host staging among ranks that share one GPU, and the watchdog aborting a
stuck NCCL communicator."""

from __future__ import annotations

import pytest
import torch

from ranks import assert_all_ok, run_ranks

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")


def test_comm_streams_have_the_priority_of_their_lane():
    (facts,) = assert_all_ok(run_ranks(1, "gpu_workers.stream_priorities", timeout=300))
    state = facts["state"]
    assert state["path"] == "nccl"
    by_lane = {s["lane"]: s for s in state["comm_streams"]}
    assert set(by_lane) == {"high", "normal", "low"}
    # CUDA's own range (torch's Stream.priority_range() clamps it to the levels torch pools).
    greatest, least = by_lane["high"]["greatest_priority"], by_lane["high"]["least_priority"]
    assert greatest <= facts["torch_greatest"] and least == facts["torch_least"]
    assert greatest < least, "this GPU offers a single stream priority: nothing to check"
    assert by_lane["high"]["priority"] == greatest
    assert by_lane["normal"]["priority"] == least
    assert by_lane["low"]["priority"] == least


def test_wait_makes_the_callers_stream_wait_without_blocking_the_host():
    (facts,) = assert_all_ok(run_ranks(1, "gpu_workers.caller_stream_waits", timeout=300))
    assert facts["path"] == "nccl"
    # The kernel ahead of the all-reduce runs about 1.5 s; the host must not sit through it.
    assert facts["host_wait_s"] < 0.3 * facts["total_s"], facts
    assert facts["stream_busy_after_wait"], facts
    assert not facts["completed_right_after_wait"], facts
    assert facts["value"] == facts["expected"]
    assert facts["doubled"] == 2 * facts["expected"]


def test_every_op_over_nccl_at_world_size_one():
    (facts,) = assert_all_ok(run_ranks(1, "gpu_workers.collectives_on_device", timeout=300))
    assert facts["path"] == "nccl"
    assert facts["failures"] == []


@pytest.mark.parametrize("world", [2, 3, 4])
def test_ranks_sharing_one_gpu_stage_through_host_memory(world):
    if torch.cuda.device_count() >= world:
        pytest.skip("every rank has a GPU of its own here: nothing is staged")
    results = assert_all_ok(run_ranks(world, "gpu_workers.collectives_on_device", timeout=600))
    for facts in results:
        assert facts["path"] == "staged"
        assert facts["failures"] == []


def test_the_watchdog_aborts_a_stuck_nccl_communicator_and_the_process_lives():
    (facts,) = assert_all_ok(run_ranks(1, "gpu_workers.watchdog_aborts_a_stuck_communicator",
                                       group_timeout_s=3, timeout=300))
    assert facts["path"] == "nccl"
    assert "later" in facts["errors"], facts
    assert "did not finish within the group timeout of 3000 ms" in facts["errors"]["later"], facts
    assert "communicators were aborted" in facts["errors"]["later"], facts
    assert facts["cpu_after"] == [1.0, 1.0, 1.0]


@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason="ncclCommShrink needs a GPU per rank, so at least two GPUs")
def test_shrink_on_device_keeps_the_nccl_communicator():
    world = min(torch.cuda.device_count(), 4)
    results = run_ranks(world, "gpu_workers.shrink_on_device", timeout=300,
                        env={"DOMINO_LOG": "info"})
    values = assert_all_ok(results)
    for r, value in enumerate(values[:-1]):
        assert value["before"] == value["expected_before"], value
        assert value["after"] == value["expected_after"], value
        assert value["state"]["path"] == "nccl", value
        # The shrunk group took the communicator NCCL shrank; it made none of its own.
        assert "ncclCommShrink" in results[r].output, results[r].output[-3000:]
