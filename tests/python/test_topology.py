"""What torch_domino.topology() and python -m torch_domino.topology report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torch_domino import _C
from ranks import assert_all_ok, run_ranks

FIXTURES = Path(__file__).resolve().parents[1] / "cpp" / "fixtures"


def test_host_view_of_the_dgx_like_fixture():
    host = _C.host_topology(str(FIXTURES / "dgx-like.xml"))
    assert host["packages"] == 2 and len(host["numa_nodes"]) == 2
    assert [g["closest_nic"] for g in host["gpus"]] == ["mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1",
                                                        "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"]


def test_group_view_names_hosts_local_ranks_and_binding():
    views = assert_all_ok(run_ranks(3, "topology_view"))
    for rank, view in enumerate(views):
        assert view["rank"] == rank and view["world_size"] == 3
        assert len(view["layout"]["hosts"]) == 1
        assert view["layout"]["hosts"][0]["ranks"] == [0, 1, 2]
        assert view["layout"]["local_rank"] == rank and view["layout"]["local_size"] == 3
        assert view["host"]["source"] == "live" and view["host"]["processing_units"] >= 1
        assert view["binding"]["cpus"] and view["binding"]["numa_nodes"]
        assert view["transports"]["intra_host"] == "shm"


def test_a_group_across_hosts_fails_clearly_until_inter_host_transport_exists(tmp_path):
    init = f"file://{tmp_path}/store"
    for outcome in assert_all_ok(run_ranks(2, "hosts_apart", init, backend="none")):
        assert outcome["raised"] == "RuntimeError", outcome
        assert "spans 2 hosts" in outcome["message"]
        assert "node-0: ranks 0" in outcome["message"] and "node-1: ranks 1" in outcome["message"]


def _can_unshare_network() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "--net", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_unshare_network(), reason="cannot create a network namespace here (needs root)")
def test_ranks_in_different_network_namespaces_are_different_hosts(tmp_path):
    # Same hostname and boot id, but no shared abstract sockets: the group must say it spans
    # hosts instead of trying shared memory between them.
    init = f"file://{tmp_path}/store"
    outcomes = assert_all_ok(run_ranks(2, "init_expecting_error", init, backend="none",
                                       command_prefix={1: ["unshare", "--net"]}))
    for outcome in outcomes:
        assert outcome["raised"] == "RuntimeError", outcome
        assert "spans 2 hosts" in outcome["message"], outcome


def test_command_line_prints_the_host_as_text_and_json():
    text = subprocess.run([sys.executable, "-m", "torch_domino.topology", "--topo-file",
                           str(FIXTURES / "dgx-like.xml")], capture_output=True, text=True, check=True)
    assert "GPU nvml7" in text.stdout and "closest NIC mlx5_3" in text.stdout
    raw = subprocess.run([sys.executable, "-m", "torch_domino.topology", "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(raw.stdout)["host"]["source"] == "live"
