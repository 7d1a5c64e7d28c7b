"""torchrun --max-restarts over the domino backend: after a rank fails, the next incarnation's
rendezvous works on the store torchrun shares across restarts, and nothing of the first
incarnation (processes, shared memory) is left."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("failure", ["exception", "sigkill"])
def test_torchrun_restarts_the_job_after_a_rank_fails(failure, tmp_path):
    before = domino_shm_segments()
    # The default rendezvous shares one store across incarnations (torch's
    # TORCH_DISABLE_SHARE_RDZV_TCP_STORE unset), so the first incarnation's keys are all there.
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3",
         "--max-restarts", "1", "--monitor-interval", "0.5", str(HERE / "torchrun_job.py"), failure,
         str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    records = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("attempt*.json"))]
    finished = sorted(r["rank"] for r in records if r.get("done") and r["attempt"] == 1)
    assert finished == [0, 1, 2], records
    assert not any(r.get("done") and r["attempt"] == 0 for r in records)
    first = [r["pid"] for r in records if "pid" in r and r["attempt"] == 0]
    assert len(first) == 3 and not any(alive(pid) for pid in first)
    assert "exited before reaching it" in done.stderr or "group broke" in done.stderr
    assert domino_shm_segments() == before
