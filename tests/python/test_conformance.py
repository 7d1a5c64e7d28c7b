"""A slice of PyTorch's own distributed suite, on gloo and on domino, through the harness.

tests/conformance/run_torch_suite.py runs the whole suite (hours on two cores); this keeps a
few minutes of it in every test run: collectives, point-to-point, barrier, sub-groups and DDP
basics that domino passes today. A test joins the list once it passes on domino.
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

# No CPU reduce_scatter test exists in the suite (only its CUDA variants).
SUBSETS = {
    2: [
        "test_broadcast",
        "test_all_reduce_sum",
        "test_all_reduce_max",
        "test_all_reduce_full_group_sum",
        "test_all_gather",
        "test_all_to_all_single_unequal_split",
        "test_gather",
        "test_scatter",
        "test_barrier",
        "test_send_recv",
        "test_isend",
        "test_send_recv_any_source",
        "test_new_subgroups",
        "test_DistributedDataParallelCPU",
        "test_ddp_hook_parity_allreduce",
    ],
    3: [
        "test_broadcast_group",
        "test_all_reduce_group_sum",
        "test_all_gather_group",
        "test_barrier_group",
    ],
}


@pytest.mark.parametrize("world", sorted(SUBSETS))
def test_suite_subset_passes_on_domino_as_on_gloo(world, tmp_path):
    names = SUBSETS[world]
    (tmp_path / "tests.txt").write_text("\n".join(names) + "\n")
    out = tmp_path / "results.md"
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--world", str(world), "--list",
         str(tmp_path / "tests.txt"), "--timeout", "120", "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    assert done.stdout.rstrip().splitlines()[-1] == f"{len(names)} passed, 0 failed", report

    rows = re.findall(r"^\| (test_\w+) \| (\d+) \| (\w+) \| (\w+) \|", out.read_text(), re.M)
    assert sorted(r[0] for r in rows) == sorted(names)
    assert all(gloo == "pass" and domino == "pass" for _, _, gloo, domino in rows), report
