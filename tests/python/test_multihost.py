"""Groups that span hosts: simulated ones (DOMINO_HOST_ID) in every layout the router plans
for, real ones (network namespaces joined by a veth pair, UCX over TCP between them), ranks on
two hosts that disagree on a collective, a host that dies mid-collective, and an external
transport plugin carrying the inter-host traffic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from namespaces import two_namespaces  # noqa: F401 (a fixture)
from ranks import assert_all_ok, domino_shm_segments, run_ranks

ROOT = Path(__file__).resolve().parents[2]
SIZES = [0, 1, 37, 70000]
LAYOUTS = {
    "2x2": ["a", "a", "b", "b"],
    "2x3": ["a", "a", "a", "b", "b", "b"],
    "3x2": ["a", "a", "b", "b", "c", "c"],
    "2+1": ["a", "a", "b"],
    "interleaved": ["a", "b", "a", "b"],
}


def host_env(hosts: list[str]) -> dict[int, dict[str, str]]:
    return {rank: {"DOMINO_HOST_ID": host} for rank, host in enumerate(hosts)}


def expected_hosts(hosts: list[str]) -> list[list[int]]:
    order = list(dict.fromkeys(hosts))
    return [[r for r, h in enumerate(hosts) if h == name] for name in order]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_op_and_dtype_across_simulated_hosts(layout):
    hosts = LAYOUTS[layout]
    # UCX between simulated hosts runs over this host's own memory, so a measured inter-host
    # link is about as fast as the in-host one and the plan would follow the VM's noise; a
    # network's costs make the router's choice the thing under test.
    env = {r: {**e, "DOMINO_COST_INTRA": "1.5,6", "DOMINO_COST_INTER": "30,1.2"}
           for r, e in host_env(hosts).items()}
    results = run_ranks(len(hosts), "surface_across_hosts", SIZES, rank_env=env, timeout=900)
    for rank, value in enumerate(assert_all_ok(results)):
        assert value["failures"] == [], f"rank {rank}: {value['failures'][:5]}"
        assert value["hosts"] == expected_hosts(hosts)
        assert value["inter"] == "ucx"
        uniform = len({hosts.count(h) for h in hosts}) == 1
        assert value["plan_16m"] == ("hierarchical" if uniform else "leader"), value


@pytest.mark.parametrize("algo", ["hierarchical,ring", "leader,rabenseifner", "flat,recursive_doubling"])
def test_forced_plans_are_right_too(algo):
    hosts = LAYOUTS["2x2"]
    env = {r: {**e, "DOMINO_ALGO": algo} for r, e in host_env(hosts).items()}
    for rank, value in enumerate(assert_all_ok(run_ranks(4, "surface_across_hosts", [0, 37, 70000],
                                                         rank_env=env, timeout=900))):
        assert value["failures"] == [], f"rank {rank}: {value['failures'][:5]}"
        assert value["plan_16m"] == {"hierarchical": "hierarchical", "leader": "leader",
                                     "flat": "flat_inter"}[algo.split(",")[0]]


@pytest.mark.parametrize("kind,needle", [("dtype", "int32"), ("op", "MAX")])
def test_ranks_on_two_hosts_disagreeing_with_equal_byte_sizes_are_told(kind, needle):
    # float32 against int32, or SUM against MAX: the bytes match, so only the call's signature,
    # carried in every UCX message's tag, can tell; no rank may get a silently wrong sum.
    results = run_ranks(2, "mismatch_across_hosts", kind, rank_env=host_env(["a", "b"]),
                        group_timeout_s=30, timeout=120)
    for outcome in assert_all_ok(results):
        assert outcome["runtime"], outcome
        assert outcome["seconds"] < 20, outcome
        assert "disagree on the collective" in outcome["message"], outcome["message"]
        assert needle in outcome["message"], outcome["message"]


def test_a_host_dying_mid_collective_is_reported_by_the_other_host():
    # Ranks 2 and 3 (host b) are SIGKILLed while everyone streams 16 MiB all-reduces.
    hosts = LAYOUTS["2x2"]
    results = run_ranks(4, "killed_mid_collective", kill_after_s={2: 4.0, 3: 4.0},
                        group_timeout_s=15, rank_env=host_env(hosts), timeout=120)
    # The two timers race: the second rank of host b may notice the first's death and finish
    # before its own kill. At least one must really have been SIGKILLed.
    codes = {results[2].returncode, results[3].returncode}
    assert -9 in codes and codes <= {-9, 0}, codes
    for r in results[:2]:
        assert r.ok, r.output[-3000:]
        outcome = r.value
        assert outcome["runtime"], outcome
        assert outcome["seconds"] < 25, outcome
        message = outcome["message"]
        # Each survivor names what it saw fail: a rank of the other host, or its own host's
        # other rank if that one gave up first.
        assert "allreduce" in message and any(f"global {g}" in message or f"rank(s) {g}" in message
                                              or f"rank {g}" in message
                                              for g in range(4) if g != r.rank), message
    assert not domino_shm_segments()


def test_every_op_between_real_network_namespaces(two_namespaces):
    # No DOMINO_HOST_ID: each namespace is a host by its own identity. UCX between them goes
    # over TCP on the veth link only.
    prefix = {r: ["ip", "netns", "exec", two_namespaces[r // 2]] for r in range(4)}
    env = {r: {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "dveth0"} for r in range(4)}
    results = run_ranks(4, "surface_across_hosts", [0, 37, 70000], command_prefix=prefix,
                        rank_env=env, timeout=900)
    for rank, value in enumerate(assert_all_ok(results)):
        assert value["failures"] == [], f"rank {rank}: {value['failures'][:5]}"
        assert value["hosts"] == [[0, 1], [2, 3]]
        assert value["plan_16m"] == "hierarchical"
    assert not domino_shm_segments()


def _build_storelink(tmp_path) -> Path:
    import torch_domino

    include = Path(torch_domino.__file__).parent / "include"
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(ROOT / "tests" / "plugins" / "storelink"), "-B", str(build),
                    "-G", "Ninja", f"-DDOMINO_INCLUDE_DIR={include}"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert (build / "libdomino-plugin-storelink.so").exists()
    return build


def test_an_external_plugin_carries_the_inter_host_traffic(tmp_path):
    build = _build_storelink(tmp_path)
    hosts = LAYOUTS["2x2"]
    env = {r: {**e, "DOMINO_PLUGIN_PATH": str(build), "DOMINO_INTER_TRANSPORT": "storelink",
               "DOMINO_ALGO": "hierarchical", "STORELINK_TRACE": "1"}
           for r, e in host_env(hosts).items()}
    results = run_ranks(4, "plugin_allreduce", rank_env=env, timeout=300)
    for r, value in enumerate(assert_all_ok(results)):
        assert value["inter"] == "storelink"
        assert value["floats"] == [6.0, 10.0, 14.0]
        assert value["ints"] == [i * 4 for i in range(7)]
        assert "/rail" in results[r].output and "storelink allreduce on " in results[r].output, results[r].output[-2000:]


def test_an_external_plugin_runs_the_collectives_it_does_not_write(tmp_path):
    # storelink writes all-reduce (SUM, PRODUCT, MIN, MAX of 8- to 64-bit types), all-gather,
    # broadcast and barrier; flat over it, reduce, reduce-scatter, gather, scatter, all-to-all and
    # the reductions it refuses run as the shared algorithms over its links. It has no send/recv.
    build = _build_storelink(tmp_path)
    env = {r: {**e, "DOMINO_PLUGIN_PATH": str(build), "DOMINO_INTER_TRANSPORT": "storelink",
               "DOMINO_ALGO": "flat", "STORELINK_TRACE": "1"}
           for r, e in host_env(LAYOUTS["2x2"]).items()}
    results = run_ranks(4, "surface_across_hosts", [0, 37], False, rank_env=env, timeout=600)
    for r, value in enumerate(assert_all_ok(results)):
        assert value["failures"] == [], f"rank {r}: {value['failures'][:5]}"
        assert value["inter"] == "storelink"
        assert "storelink link_send on " in results[r].output, results[r].output[-2000:]


def test_an_unknown_inter_transport_is_refused_at_init(tmp_path):
    results = run_ranks(2, "init_expecting_error", f"file://{tmp_path}/store", backend="none",
                        env={"DOMINO_INTER_TRANSPORT": "carrier-pigeon"})
    for outcome in assert_all_ok(results):
        assert "DOMINO_INTER_TRANSPORT='carrier-pigeon'" in outcome["message"], outcome
        assert "shm" in outcome["message"] and "ucx" in outcome["message"]
