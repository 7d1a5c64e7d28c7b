"""Whoever can reach a rank's ports (docs/security.md): while 4 ranks on two simulated hosts run
exact collectives, every TCP port they listen on gets random bytes, floods, headers claiming
absurd sizes and half-open connections. Every result must stay exact and every rank finish."""

from __future__ import annotations

import json
import random
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

from ranks import assert_all_ok, run_ranks

HOSTS = ["a", "a", "b", "b"]


def attack(address: str, port: int, rng: random.Random, held: list) -> bool:
    """One attack of a random kind; False when the port refused the connection."""
    def connect():
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(address, address)
        s = socket.create_connection((host, port), timeout=2)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return s

    kinds = ["random", "flood", "sizes", "half-open", "close"]
    kind = rng.choice(kinds)
    try:
        s = connect()
    except OSError:
        return False
    try:
        if kind == "random":
            s.sendall(rng.randbytes(rng.randint(1, 4096)))
        elif kind == "flood":
            for _ in range(64):
                s.sendall(rng.randbytes(16384))
        elif kind == "sizes":
            for value in (2**64 - 1, 2**63, 2**32 - 1, 2**31, 0):
                s.sendall(struct.pack("<QQQQ", value, value, value, value) * 4)
        elif kind == "half-open":
            s.sendall(rng.randbytes(7))
            held.append(s)  # never closed until the ranks are done
            return True
        s.close()
    except OSError:
        pass  # reset or full mid-attack: the port defended itself
    return True


ATTACKS_PER_PORT = 100


def test_garbage_on_every_port_leaves_every_result_exact():
    with tempfile.TemporaryDirectory(prefix="domino-garbage-") as port_dir:
        done = threading.Event()
        held: list = []
        attacked: dict[tuple, int] = {}
        errors: list[BaseException] = []

        def attacker():
            try:
                rng = random.Random(1234)
                files: list[Path] = []
                while not done.is_set() and len(files) < len(HOSTS):
                    files = list(Path(port_dir).glob("[0-9]*.json"))
                    time.sleep(0.05)
                targets = sorted({tuple(t) for f in files for t in json.loads(f.read_text())})
                Path(port_dir, "attacking").touch()
                # The ranks run checked rounds until told: every attack below lands mid-rounds.
                while not done.is_set() and (len(attacked) < len(targets)
                                             or min(attacked.values()) < ATTACKS_PER_PORT):
                    for address, port in targets:
                        if attack(address, port, rng, held):
                            attacked[(address, port)] = attacked.get((address, port), 0) + 1
                Path(port_dir, "enough").touch()
            except BaseException as error:  # noqa: BLE001 (reported by the test)
                errors.append(error)

        thread = threading.Thread(target=attacker, daemon=True)
        thread.start()
        try:
            # TCP only between the simulated hosts: the attacked listeners carry the job.
            env = {r: {"DOMINO_HOST_ID": h, "UCX_TLS": "tcp,self"} for r, h in enumerate(HOSTS)}
            results = run_ranks(4, "garbage_workers.exact_under_garbage", port_dir, 5000,
                                rank_env=env, timeout=600)
        finally:
            done.set()
            thread.join(timeout=30)
            for s in held:
                s.close()
        assert not errors, errors
        values = assert_all_ok(results)
        for rank, value in enumerate(values):
            assert value["wrong"] == [], f"rank {rank}: {value['wrong']}"
            assert 0 < value["rounds"] < 5000, value["rounds"]
        ports = {tuple(p) for v in values for p in v["ports"]}
        assert ports, "the ranks listen on no TCP port: nothing was attacked"
        assert set(attacked) == ports, attacked
        assert min(attacked.values()) >= ATTACKS_PER_PORT, attacked
