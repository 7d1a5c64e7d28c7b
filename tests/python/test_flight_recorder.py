"""The Flight Recorder: with TORCH_FR_BUFFER_SIZE set, every domino op is recorded in c10d's
form, a hang dumps every rank's buffer where TORCH_FR_DUMP_TEMP_FILE says, and torch's own
analyzer (python -m torch.distributed.flight_recorder.fr_trace) reads the dumps and names the
rank that skipped a collective, or the two collectives that did not match."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ranks import assert_all_ok, run_ranks

GROUP_TIMEOUT_S = 3


def _env(tmp_path) -> dict[str, str]:
    return {"TORCH_FR_BUFFER_SIZE": "200",
            "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "dumps" / "trace_rank_")}


def _fr_trace(tmp_path) -> str:
    """What torch's own analyzer says of the dumps (it reports on stderr, exit code 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", "-p", "trace_rank_",
         str(tmp_path / "dumps")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("hosts", [1, 2])
def test_fr_trace_names_the_rank_that_skipped_a_collective(tmp_path, hosts):
    # World 3 on one host; world 4 as two simulated hosts of two ranks each.
    world = 3 if hosts == 1 else 4
    prefix = str(tmp_path / "dumps" / "trace_rank_")
    rank_env = {r: {"DOMINO_HOST_ID": f"h{r // 2}"} for r in range(world)} if hosts > 1 else None
    results = assert_all_ok(run_ranks(world, "flight_workers.skip_one", prefix, 1,
                                      env=_env(tmp_path), rank_env=rank_env,
                                      group_timeout_s=GROUP_TIMEOUT_S, timeout=300))
    for rank, result in enumerate(results):
        assert result["dumped"], f"rank {rank} wrote no dump"
        if rank != 1:
            # Our own message names the op's place in the group's sequence.
            assert "collective #2 of group" in result["error"], result["error"]
    said = _fr_trace(tmp_path)
    assert "Not all ranks joining collective, sequence number: 2" in said, said[-3000:]
    assert "missing ranks: {1}" in said, said[-3000:]
    assert "collective: nccl:all_reduce" in said


def test_a_dump_never_writes_through_a_link_planted_at_its_partial_file(tmp_path):
    # Someone who can write in a shared dump folder plants links where the dumps are written
    # first; the dumps must land anyway, and the links' targets stay as they were.
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    victims = []
    for rank in range(2):
        victim = tmp_path / f"victim{rank}"
        victim.write_text("untouched")
        (dumps / f".domino-dump-in-progress-{rank}").symlink_to(victim)
        victims.append(victim)
    prefix = str(dumps / "trace_rank_")
    results = assert_all_ok(run_ranks(2, "flight_workers.skip_one", prefix, 1,
                                      env=_env(tmp_path), group_timeout_s=GROUP_TIMEOUT_S,
                                      timeout=300))
    for rank, result in enumerate(results):
        assert result["dumped"], f"rank {rank} wrote no dump"
        assert (dumps / f"trace_rank_{rank}").stat().st_size > 0
    assert [v.read_text() for v in victims] == ["untouched", "untouched"]


@pytest.mark.parametrize("hosts", [1, 2])
def test_fr_trace_names_a_broadcast_against_an_all_reduce(tmp_path, hosts):
    world = 2 if hosts == 1 else 4
    prefix = str(tmp_path / "dumps" / "trace_rank_")
    rank_env = {r: {"DOMINO_HOST_ID": f"h{r // 2}"} for r in range(world)} if hosts > 1 else None
    results = assert_all_ok(run_ranks(world, "flight_workers.mismatch", prefix,
                                      env=_env(tmp_path), rank_env=rank_env,
                                      group_timeout_s=GROUP_TIMEOUT_S, timeout=300))
    for rank, result in enumerate(results):
        assert result["dumped"], f"rank {rank} wrote no dump"
        # Across hosts a broadcast's root only sends, and its sends may all land: its own call
        # can succeed while the receivers fail. It still dumps, at the others' request.
        assert result["error"] or (hosts > 1 and rank == 0), f"rank {rank} did not fail"
    said = _fr_trace(tmp_path)
    assert "Collective sequence number: 2 has errors" in said, said[-3000:]
    assert "COLLECTIVE_TYPE_MISMATCH" in said, said[-3000:]
    # Which rank is called the culprit depends on the order fr_trace lists the files in.
    assert "'broadcast'" in said and "'all_reduce'" in said, said[-3000:]


def test_every_op_of_every_group_and_lane_is_recorded_with_its_state(tmp_path):
    results = assert_all_ok(run_ranks(2, "flight_workers.recorded", env=_env(tmp_path)))
    for rank, result in enumerate(results):
        assert result["enabled"] and result["version"] == "2.10"
        config = result["pg_config"]
        descs = {c["desc"] for c in config.values()}
        assert {"default_pg", "tensor_parallel"} <= descs, config
        assert all(c["ranks"] == "[0, 1]" for c in config.values()), config
        entries = result["entries"]
        names = [e["profiling_name"] for e in entries]
        assert names[:5] == ["nccl:all_reduce", "nccl:all_reduce", "nccl:_all_gather_base",
                             "nccl:all_gather", "nccl:reduce_scatter"], names
        peer = "nccl:send 0->1" if rank == 0 else "nccl:recv 1<-0"
        assert peer in names, names
        assert names[-1] == "nccl:all_reduce_barrier", names
        for entry in entries:
            assert entry["state"] == "completed" and entry["retired"], entry
            assert entry["has_duration"], entry
        tp, default = entries[0], entries[1]
        assert tp["process_group"][1] == "tensor_parallel" and tp["collective_seq_id"] == 1
        assert default["process_group"][1] == "default_pg"
        # The default group's collectives count 1, 2, 3, ... in order, the p2p op apart.
        seq = [e["collective_seq_id"] for e in entries[1:] if not e["is_p2p"]]
        assert seq == list(range(1, len(seq) + 1)), seq
        p2p = [e for e in entries if e["is_p2p"]]
        assert len(p2p) == 1 and p2p[0]["p2p_seq_id"] == 1 and p2p[0]["input_sizes"] == [[3]]
        assert p2p[0]["input_dtypes"] == ["Long"]
        # fr_trace's size checks: all-gather outputs and reduce-scatter inputs as [world, n].
        assert entries[3]["output_sizes"] == [[2, 8]], entries[3]
        assert entries[4]["input_sizes"] == [[2, 8]], entries[4]
        assert entries[2]["output_sizes"] == [[16]], entries[2]
        status = [s for name, s in result["pg_status"].items()
                  if config[name]["desc"] == "default_pg"][0]
        assert status["last_completed_collective"] == seq[-1], status


def test_nothing_is_recorded_or_dumped_unless_asked_for(tmp_path):
    env = {"TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "dumps" / "trace_rank_")}
    results = assert_all_ok(run_ranks(2, "flight_workers.recorded", env=env))
    assert results[0]["entries"] == [] and not results[0]["enabled"]
    assert not os.path.exists(tmp_path / "dumps")
