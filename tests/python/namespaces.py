"""Two network namespaces joined by a veth pair: two real hosts' worth of networking on one
machine, for the tests that cross hosts with real TCP (test_multihost, test_launchers)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest


def _can_make_namespaces() -> bool:
    return (shutil.which("ip") is not None and os.geteuid() == 0
            and subprocess.run(["ip", "netns", "add", "domino-probe"], capture_output=True).returncode == 0
            and subprocess.run(["ip", "netns", "del", "domino-probe"], capture_output=True).returncode == 0)


class Namespaces(list):
    """The namespaces' names, and each one's address on the veth link."""

    def __init__(self, names: list[str], addresses: list[str]):
        super().__init__(names)
        self.addresses = addresses


@pytest.fixture
def two_namespaces():
    """Two network namespaces joined by a veth pair named dveth0 on both ends (10.77.x.1/2, in
    .addresses)."""
    if not _can_make_namespaces():
        pytest.skip("cannot create network namespaces here (needs root and iproute2)")
    tag = uuid.uuid4().hex[:6]
    names = [f"dom-{tag}-a", f"dom-{tag}-b"]
    subnet = f"10.77.{int(tag[:2], 16)}"

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        for n in names:
            ip("netns", "add", n)
        ip("link", "add", "dveth0", "netns", names[0], "type", "veth", "peer", "name", "dveth0",
           "netns", names[1])
        for i, n in enumerate(names):
            ip("-n", n, "addr", "add", f"{subnet}.{i + 1}/24", "dev", "dveth0")
            ip("-n", n, "link", "set", "dveth0", "up")
            ip("-n", n, "link", "set", "lo", "up")
        yield Namespaces(names, [f"{subnet}.1", f"{subnet}.2"])
    finally:
        for n in names:
            # Whatever a test started there and left behind (torchrun's workers run in sessions
            # of their own), then the namespace.
            pids = subprocess.run(["ip", "netns", "pids", n], capture_output=True, text=True)
            for pid in pids.stdout.split():
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
