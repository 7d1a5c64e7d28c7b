"""A slice of PyTorch's own distributed suite, on gloo and on domino, through the harness.

tests/conformance/run_torch_suite.py runs the whole suite (hours on two cores); this keeps a
few minutes of it in every test run: collectives, point-to-point, timeouts, monitored barriers,
sparse all-reduce and DDP basics, with the suite's profiler checks applied to domino as to gloo.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("expecttest", reason="torch's test suite needs expecttest "
                                         "(add it to scripts/requirements.txt)")

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "tests" / "conformance" / "run_torch_suite.py"

# The suite has no CPU test of reduce_scatter (CUDA only) nor of all_to_all (MPI only).
SUBSETS = {
    2: [
        "test_broadcast",
        "test_all_reduce_sum",
        "test_reduce_sum",
        "test_all_gather",
        "test_all_gather_coalesced_simple",
        "test_gather",
        "test_scatter",
        "test_barrier_timeout_global",
        "test_send_recv",
        "test_send_recv_any_source",
        "test_sparse_all_reduce_sum",
        "test_monitored_barrier_gloo",
        "test_DistributedDataParallelCPU",
    ],
    # An odd world; the suite's *_group tests want a larger one and skip here.
    3: [
        "test_all_reduce_sum",
        "test_monitored_barrier_gloo_subgroup",
        "test_DistributedDataParallelCPU",
    ],
}


@pytest.mark.parametrize("world", sorted(SUBSETS))
def test_suite_subset_passes_on_domino_as_on_gloo(world, tmp_path):
    names = SUBSETS[world]
    (tmp_path / "tests.txt").write_text("\n".join(names) + "\n")
    out = tmp_path / "results.md"
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--world", str(world), "--list",
         str(tmp_path / "tests.txt"), "--timeout", "120", "--out", str(out),
         "--expect-profiler-events"],
        capture_output=True, text=True, timeout=900,
    )
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert done.stdout.rstrip().splitlines()[-1] == f"{len(names)} passed, 0 failed", report

    rows = re.findall(r"^\| (test_\w+) \| (\d+) \| (\w+) \| (\w+) \|", out.read_text(), re.M)
    assert sorted(r[0] for r in rows) == sorted(names)
    assert all(gloo == "pass" and domino == "pass" for _, _, gloo, domino in rows), report
