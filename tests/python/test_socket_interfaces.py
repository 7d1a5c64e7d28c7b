"""Which network interfaces UCX may use (DOMINO_SOCKET_IFNAME, else the one that reaches the
job's store, or, on the store's own host, the other hosts): a name that is not here fails init
naming it; a file store leaves UCX its own choice and says why; across two real network
namespaces the job runs exactly and UCX listens on just the interfaces DOMINO_LOG=info names."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest

from namespaces import two_namespaces  # noqa: F401 (a fixture)
from ranks import assert_all_ok, run_ranks

DEVICES_LINE = re.compile(r"UCX's network devices: (\S+) \((.*)\)$", re.MULTILINE)


def test_an_interface_that_is_not_here_fails_init_naming_it_and_those_that_are(tmp_path):
    env = {"DOMINO_SOCKET_IFNAME": "nosuch9,=eth"}
    results = run_ranks(2, "interface_workers.init_outcome", f"file://{tmp_path}/store", env=env,
                        backend="none", timeout=90)
    for outcome in assert_all_ok(results):
        assert outcome["error"] == "ValueError", outcome
        assert outcome["seconds"] < 15, outcome
        message = outcome["message"]
        assert "DOMINO_SOCKET_IFNAME='nosuch9,=eth'" in message, message
        for _, name in socket.if_nameindex():
            assert name in message, (name, message)


def test_a_file_store_leaves_ucx_its_own_choice_and_says_why(tmp_path):
    hosts = {r: {"DOMINO_HOST_ID": f"h{r}", "DOMINO_LOG": "info"} for r in range(2)}
    results = run_ranks(2, "interface_workers.exact_job", f"file://{tmp_path}/store",
                        rank_env=hosts, backend="none", timeout=120)
    for result, value in zip(results, assert_all_ok(results)):
        assert value["failures"] == [], value
        assert value["ucx_net_devices"] is None, value
        assert "FileStore" in value["rule"], value
        assert "UCX's network devices: every one UCX finds, since the job's store is a " \
               "c10d::FileStore" in result.output, result.output[-2000:]


def test_a_later_group_cannot_choose_other_interfaces_than_the_first(tmp_path):
    # UCX reads its devices once per process: the first group's (UCX's own, with a file store)
    # hold, and a later group whose DOMINO_SOCKET_IFNAME asks for others fails its init. Two
    # simulated hosts: a group on one host chooses nothing by default, and fixes nothing.
    hosts = {r: {"DOMINO_HOST_ID": f"h{r}"} for r in range(2)}
    results = run_ranks(2, "interface_workers.later_group_with_other_interfaces",
                        f"file://{tmp_path}/store", rank_env=hosts, backend="none", timeout=90)
    for outcome in assert_all_ok(results):
        assert outcome["sum"] == [2.0] * 3, outcome
        assert outcome["error"] == "ValueError", outcome
        message = outcome["message"]
        assert "rule gives UCX 'lo' (DOMINO_SOCKET_IFNAME='lo' selects them)" in message, message
        assert "first domino group, group '0'" in message, message
        assert "gave it every device UCX finds" in message, message
        assert "before the process's first init_process_group" in message, message


NETNS_FILES = Path("/etc/netns")


def _hosts_files(namespaces, store_name: str, addresses: list[str]):
    """/etc/netns/<name>/hosts, which `ip netns exec` puts over /etc/hosts: store_name resolves
    to addresses[i] in namespace i."""
    for name, address in zip(namespaces, addresses):
        folder = NETNS_FILES / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hosts").write_text(
            f"127.0.0.1 localhost\n::1 localhost\n{address} {store_name}\n")


@pytest.mark.parametrize("case", ["store", "store_on_loopback", "per_rank_lists"])
def test_across_namespaces_ucx_listens_on_what_the_log_names(two_namespaces, case):
    # One rank per namespace, the store on rank 0's host, UCX over TCP. By default each rank
    # takes the interface toward the store. Where the store's name is loopback on its own host
    # (Debian's 127.0.1.1 for the host name), that host takes the interface toward the other
    # host. With lists, each rank its own (they need not agree): rank 0 adds loopback, rank 1
    # names its veth end exactly.
    veth = two_namespaces.addresses
    store = veth[0]
    netns_files_existed = NETNS_FILES.exists()
    if case == "store_on_loopback":
        store = "domino-store"
        _hosts_files(two_namespaces, store, ["127.0.1.1", veth[0]])
    lists = {"per_rank_lists": ["dveth,lo", "=dveth0"]}.get(case, [None, None])
    expected = [["dveth0", "lo"], ["dveth0"]] if case == "per_rank_lists" else [["dveth0"]] * 2
    env = {}
    for r in range(2):
        env[r] = {"UCX_TLS": "tcp,self", "DOMINO_LOG": "info"}
        if lists[r] is not None:
            env[r]["DOMINO_SOCKET_IFNAME"] = lists[r]
    prefix = {r: ["ip", "netns", "exec", two_namespaces[r]] for r in range(2)}
    try:
        results = run_ranks(2, "interface_workers.exact_job", f"tcp://{store}:29517",
                            command_prefix=prefix, rank_env=env, backend="none", timeout=180)
    finally:
        for name in two_namespaces:
            shutil.rmtree(NETNS_FILES / name, ignore_errors=True)
        if not netns_files_existed and NETNS_FILES.exists():
            NETNS_FILES.rmdir()
    for r, (result, value) in enumerate(zip(results, assert_all_ok(results))):
        assert value["failures"] == [], value
        logged = DEVICES_LINE.findall(result.output)
        assert logged, result.output[-3000:]
        devices, rule = logged[0]
        assert sorted(devices.split(",")) == expected[r], (devices, rule)
        assert value["ucx_net_devices"] == devices, value
        # UCX's TCP transport listens on each device it was given, and on nothing else.
        assert value["listening"] == expected[r], value
        if lists[r] is not None:
            assert f"DOMINO_SOCKET_IFNAME='{lists[r]}' selects them" in rule, rule
        elif case == "store_on_loopback" and r == 0:
            assert f"{veth[0]}, this host's address toward another host of the group at " \
                   f"{veth[1]} (the job's store at {store} is this host (127.0.0.1 on lo))" \
                   in rule, rule
        else:
            assert f"{veth[r]}, this host's address toward the job's store at {store}" in rule, rule
