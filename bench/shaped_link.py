"""Two simulated hosts for benchmarks: network namespaces joined by a veth pair whose two ends
can be shaped with tc (token bucket). Removed on exit. Needs root, iproute2 and tc; without
them `up` stays False and the caller decides what to do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class ShapedLink:
    def __init__(self, namespaces=("domino-bench-a", "domino-bench-b"),
                 addresses=("10.77.0.1", "10.77.0.2"), device_prefix: str = "dbench") -> None:
        self.namespaces = namespaces
        self.addresses = addresses
        self.prefix = device_prefix
        self.up = False

    def device(self, host: int) -> str:
        return f"{self.prefix}{host}"

    def __enter__(self):
        if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
            return self
        self.__exit__()
        try:
            for ns in self.namespaces:
                sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", self.device(0), "netns", self.namespaces[0], "type", "veth",
               "peer", "name", self.device(1), "netns", self.namespaces[1])
            for index, ns in enumerate(self.namespaces):
                dev = self.device(index)
                sh("ip", "-n", ns, "addr", "add", f"{self.addresses[index]}/24", "dev", dev)
                sh("ip", "-n", ns, "link", "set", dev, "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                # As on training clusters: a connection idle during compute keeps its window
                # instead of slow-starting every reduction again.
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_slow_start_after_idle=0")
            self.wait_for_carrier()
            self.up = True
        except subprocess.CalledProcessError as error:
            print(f"# no network namespaces here ({error.stderr.strip()})")
            self.__exit__()
        return self

    def wait_for_carrier(self, seconds: float = 5.0) -> None:
        # `ip link set up` returns before the veth pair has carrier; a worker that connects in
        # that window gets "Destination is unreachable" from UCX.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            states = [sh("ip", "-n", ns, "-o", "link", "show", "dev", self.device(i)).stdout
                      for i, ns in enumerate(self.namespaces)]
            if all("LOWER_UP" in state and "state UP" in state for state in states):
                return
            time.sleep(0.05)
        raise subprocess.CalledProcessError(1, "ip link", stderr="the veth pair never came up")

    def shape(self, mbit: float) -> None:
        for index, ns in enumerate(self.namespaces):
            sh("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", self.device(index), "root",
               "tbf", "rate", f"{mbit:.0f}mbit", "burst", "256kb", "latency", "100ms")

    def __exit__(self, *exc) -> None:
        for ns in self.namespaces:
            sh("ip", "netns", "del", ns, check=False)
        self.up = False


def run_pair(link: ShapedLink, argv_of_rank, timeout: float, env: dict | None = None) -> dict:
    """Runs `python *argv_of_rank(rank, master)` for ranks 0 and 1, each on its simulated host (its
    namespace, or loopback when the link is not up), with the link's device for UCX and gloo, and
    returns rank 0's last line of output read as JSON. A failed worker ends the run with its
    output."""
    master = link.addresses[0] if link.up else "127.0.0.1"
    procs = []
    for rank in range(2):
        device = link.device(rank) if link.up else "lo"
        worker_env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME=device,
                          UCX_TLS="tcp,self", UCX_NET_DEVICES=device, **(env or {}))
        cmd = [sys.executable, *argv_of_rank(rank, master)]
        if link.up:
            cmd = ["ip", "netns", "exec", link.namespaces[rank], *cmd]
        procs.append(subprocess.Popen(cmd, env=worker_env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=timeout) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise SystemExit(f"worker failed:\n{out[-2000:]}\n{err[-3000:]}")
    return json.loads(outputs[0][0].strip().splitlines()[-1])
