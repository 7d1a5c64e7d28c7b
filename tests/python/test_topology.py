"""What torch_domino.topology() and python -m torch_domino.topology report."""

from __future__ import annotations

import json
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
        assert view["binding"]["cpus"] and view["binding"]["numa"] >= 0
        assert view["transports"]["intra_host"] == "shm"
        # No CUDA collective yet: nothing decided, no comm stream made; this build has NCCL.
        assert view["cuda"] == {"path": "undecided", "nccl_built": True, "comm_streams": []}


def test_a_group_across_hosts_reports_hosts_transports_and_plans(tmp_path):
    init = f"file://{tmp_path}/store"
    for rank, view in enumerate(assert_all_ok(run_ranks(2, "hosts_apart", init, backend="none"))):
        assert view["layout"]["hosts"] == [{"id": "node-0", "ranks": [0]}, {"id": "node-1", "ranks": [1]}]
        assert view["transports"] == {"intra_host": "shm", "inter_host": "ucx"}
        routing = view["routing"]
        # Rank 0 and the other host's first rank measured the link at init; both ranks use that.
        inter = routing["cost_model"]["inter"]
        assert inter["source"] == "measured" and inter["latency_us"] > 0 and inter["gbytes_per_s"] > 0
        plans = {(p["op"], p["bytes"]): p for p in routing["plans"]}
        assert plans[("all_reduce", 64 << 20)]["plan"] in ("hierarchical", "leader", "flat_inter")
        assert plans[("all_gather", 8)]["plan"] == "flat_inter"
        assert plans[("all_gather", 8)]["steps"] == "all_gather@group:ring"
        # The inter-host all-reduce step names what UCX is handed with the call.
        assert plans[("all_reduce", 8)]["algorithm"] in ("ring", "recursive_doubling", "rabenseifner")
        assert plans[("all_reduce", 8)]["steps"].endswith(":" + plans[("all_reduce", 8)]["algorithm"])
        assert all(p["predicted_us"] > 0 for p in routing["plans"] if p["op"] != "barrier")


def test_a_host_with_two_ranks_has_its_shared_memory_measured_too(tmp_path):
    # Four ranks, two per simulated host: rank 0 and its host's other rank time the in-host link
    # as rank 0 and the next host's first rank time the network; every rank adopts rank 0's.
    init = f"file://{tmp_path}/store"
    views = assert_all_ok(run_ranks(4, "hosts_apart", init, backend="none"))
    for view in views:
        costs = view["routing"]["cost_model"]
        for link in ("intra", "inter"):
            assert costs[link]["source"] == "measured", costs
            assert costs[link]["latency_us"] > 0 and costs[link]["gbytes_per_s"] > 0, costs
        assert costs == views[0]["routing"]["cost_model"]


def test_configured_costs_and_forced_plans_show_in_the_report(tmp_path):
    init = f"file://{tmp_path}/store"
    env = {"DOMINO_COST_INTER": "100,0.5", "DOMINO_ALGO": "leader,ring"}
    for view in assert_all_ok(run_ranks(2, "hosts_apart", init, backend="none", env=env)):
        routing = view["routing"]
        assert routing["cost_model"]["inter"] == {"latency_us": 100.0, "gbytes_per_s": 0.5,
                                                  "source": "configured"}
        big = next(p for p in routing["plans"] if p["op"] == "all_reduce" and p["bytes"] == 64 << 20)
        assert big["plan"] == "leader" and big["forced"] and big["algorithm"] == "ring"
        assert big["steps"] == "all_reduce@leaders:ring", big  # one rank per host: no host steps


def test_the_algorithm_table_lists_what_the_router_may_hand_down():
    import torch_domino
    table = {(a["name"], op, a["runs_on"]) for a in torch_domino.algorithms() for op in a["ops"]}
    for name in ("ring", "recursive_doubling", "rabenseifner"):
        assert (name, "all_reduce", "links") in table
    assert ("rsag", "all_reduce", "shm") in table and ("binomial_tree", "broadcast", "links") in table
    # Every algorithm over links is priced for the ops it serves: the router chooses each step's.
    unpriced = [(a["name"], a["ops"]) for a in torch_domino.algorithms()
                if a["runs_on"] == "links" and not a["modeled"]]
    assert unpriced == []


@pytest.mark.parametrize("algo", ["intra:ring", "intra:recursive_doubling", "intra:rabenseifner"])
def test_an_in_host_algorithm_from_the_table_runs_on_shared_memory_and_is_reported(algo):
    # intra:<name> runs the table's all-reduce over shared memory's links; the report names it.
    name = algo.removeprefix("intra:")
    for value in assert_all_ok(run_ranks(3, "in_host_algorithm", env={"DOMINO_ALGO": algo})):
        assert value["failures"] == []
        assert value["steps"] == {"8": f"all_reduce@group:{name}",
                                  str(16 << 20): f"all_reduce@group:{name}"}


def test_ranks_spread_over_the_numa_nodes_of_a_two_socket_host():
    env = {"DOMINO_TOPO_FILE": str(FIXTURES / "two-socket-server.xml")}
    views = assert_all_ok(run_ranks(4, "topology_view", env=env))
    assert [v["binding"]["numa"] for v in views] == [0, 0, 1, 1]
    for view in views:  # this machine's CPUs are not the fixture's: they fall back to the allowed ones
        assert view["binding"]["cpus"] and view["host"]["source"].endswith("two-socket-server.xml")


def test_command_line_prints_the_host_as_text_and_json():
    text = subprocess.run([sys.executable, "-m", "torch_domino.topology", "--topo-file",
                           str(FIXTURES / "dgx-like.xml")], capture_output=True, text=True, check=True)
    assert "GPU nvml7" in text.stdout and "closest NIC mlx5_3" in text.stdout
    raw = subprocess.run([sys.executable, "-m", "torch_domino.topology", "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(raw.stdout)["host"]["source"] == "live"
