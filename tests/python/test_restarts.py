"""torchrun --max-restarts over the domino backend: after a rank fails, the next incarnation's
rendezvous works on the store torchrun shares across restarts, and nothing of the first
incarnation (processes, shared memory) is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ranks import domino_shm_segments

HERE = Path(__file__).resolve().parent


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def records(out_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out_dir.glob("attempt*.json"))]


@pytest.mark.parametrize("failure", ["exception", "sigkill"])
def test_torchrun_restarts_the_job_after_a_rank_fails(failure, tmp_path):
    before = domino_shm_segments()
    # The default rendezvous shares one store across incarnations (torch's
    # TORCH_DISABLE_SHARE_RDZV_TCP_STORE unset), so the first incarnation's keys are all there.
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"}
    # The job's survivors defer torchrun's SIGTERM until their collective returns (see
    # torchrun_job.py), so they name the failure however soon torchrun's monitor sees it.
    job = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3",
         "--max-restarts", "1", "--monitor-interval", "2", str(HERE / "torchrun_job.py"), failure,
         str(tmp_path)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = job.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        job.send_signal(signal.SIGTERM)  # torchrun stops and reaps its workers
        try:
            out, err = job.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            job.kill()
            out, err = job.communicate()
        for r in records(tmp_path):
            if alive(r["pid"]):
                os.kill(r["pid"], signal.SIGKILL)
        pytest.fail(f"torchrun did not finish in 300 s:\n{out[-3000:]}\n{err[-5000:]}")
    assert job.returncode == 0, out[-3000:] + err[-5000:]
    seen = records(tmp_path)
    finished = sorted(r["rank"] for r in seen if r["done"] and r["attempt"] == 1)
    assert finished == [0, 1, 2], seen
    first = [r for r in seen if r["attempt"] == 0]
    assert len(first) == 3 and not any(r["done"] for r in first), first
    assert not any(alive(r["pid"]) for r in first)
    # The survivors named the failed rank before torchrun restarted the job.
    named = [r for r in first if "rank(s) 2" in r.get("error", "") or "group broke" in r.get("error", "")]
    assert named, first
    assert domino_shm_segments() == before
