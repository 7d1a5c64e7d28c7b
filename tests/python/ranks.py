"""Launches real rank processes for multi-process tests.

Each rank is a fresh ``python`` process that joins a group through a FileStore in a temporary
directory (no port races), runs ``function`` from a worker module, and prints its JSON result
as the last line. Nothing is mocked: the ranks talk through the real backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT_MARK = "@@domino-result@@"


@dataclass
class RankResult:
    rank: int
    returncode: int
    value: object
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _address(hex_address: str, table: str) -> str:
    """/proc/net/tcp's hex address (little-endian words) as text."""
    import ipaddress
    import socket
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if table.endswith("6"):
        return str(ipaddress.IPv6Address(words))
    return socket.inet_ntoa(words)


def listening_tcp_ports() -> list[list]:
    """[address, port] of every TCP socket this process listens on (its sockets' inodes in
    /proc/net/tcp and tcp6)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                address, port = fields[1].rsplit(":", 1)
                found.add((_address(address, table), int(port, 16)))
    return sorted([a, p] for a, p in found)


def free_port() -> int:
    """A TCP port free on this host now, for a launcher's store."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(
    world: int,
    function: str,
    *args,
    env: dict[str, str] | None = None,
    timeout: float = 180,
    backend: str = "domino",
    group_timeout_s: float = 60,
    kill_after_s: dict[int, float] | None = None,
    command_prefix: dict[int, list[str]] | None = None,
    rank_env: dict[int, dict[str, str]] | None = None,
) -> list[RankResult]:
    """Runs ``workers.<function>(*args)`` on ``world`` ranks and returns each rank's result."""
    with tempfile.TemporaryDirectory(prefix="domino-ranks-") as tmp:
        store = os.path.join(tmp, "store")
        child_env = dict(os.environ)
        child_env.update(env or {})
        child_env["PYTHONPATH"] = str(HERE) + os.pathsep + child_env.get("PYTHONPATH", "")
        child_env.setdefault("OMP_NUM_THREADS", "1")
        procs = []
        for rank in range(world):
            spec = json.dumps(
                {
                    "rank": rank,
                    "world": world,
                    "init_method": f"file://{store}",
                    "backend": backend,
                    "function": function,
                    "args": list(args),
                    "group_timeout_s": group_timeout_s,
                    "kill_after_s": (kill_after_s or {}).get(rank),
                }
            )
            procs.append(
                subprocess.Popen(
                    [*(command_prefix or {}).get(rank, []), sys.executable,
                     str(HERE / "rank_main.py"), spec],
                    env={**child_env, **(rank_env or {}).get(rank, {})},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        results = []
        for rank, proc in enumerate(procs):
            try:
                output, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                for p in procs:
                    p.kill()
                output, _ = proc.communicate()
                output += f"\n[harness] rank {rank} did not finish within {timeout}s"
            value = None
            for line in output.splitlines():
                if line.startswith(RESULT_MARK):
                    value = json.loads(line[len(RESULT_MARK):])
            results.append(RankResult(rank, proc.returncode, value, output))
        return results


def assert_all_ok(results: list[RankResult]) -> list[object]:
    failed = [r for r in results if not r.ok]
    assert not failed, "\n\n".join(
        f"--- rank {r.rank} exited {r.returncode} ---\n{r.output[-4000:]}" for r in failed
    )
    return [r.value for r in results]


def assert_all_reported(results: list[RankResult]) -> list[object]:
    """Each rank's value, for reference runs on Gloo: its process sometimes aborts in its own
    teardown ("terminate called without an active exception", after the value was printed),
    which says nothing about the result being compared. A rank that reported nothing fails."""
    missing = [r for r in results if r.value is None]
    assert not missing, "\n\n".join(
        f"--- rank {r.rank} exited {r.returncode} ---\n{r.output[-4000:]}" for r in missing
    )
    return [r.value for r in results]


def domino_shm_segments() -> set[str]:
    """Names in /dev/shm that look like ours: there must never be any."""
    try:
        return {n for n in os.listdir("/dev/shm") if "domino" in n.lower()}
    except FileNotFoundError:
        return set()
