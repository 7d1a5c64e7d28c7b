"""Launching as users do across machines: torchrun's c10d rendezvous, one torchrun per host, on
two real network namespaces joined by a veth link (the hosts reach each other only by address,
so each agent is given --local-addr). The examples' per-step losses must equal the same job on
one host with 4 ranks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from namespaces import two_namespaces  # noqa: F401 (a fixture)
from ranks import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "train_gpt.py": ["--steps", "3", "--seq", "32", "--hidden", "64", "--heads", "4"],
    "megatron_gpt.py": ["--steps", "3", "--seq", "32", "--hidden", "64", "--heads", "4"],
}
# UCX between the namespaces over the veth link only (each namespace also has its loopback).
UCX_ENV = {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "dveth0"}


def losses(output: str) -> list[tuple[int, float]]:
    return [(int(n), float(loss))
            for n, loss in re.findall(r"^step (\d+) loss ([0-9.]+)", output, re.MULTILINE)]


def one_host(script: str) -> list[tuple[int, float]]:
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4",
         "--master-port", str(free_port()), str(ROOT / "examples" / script), *EXAMPLES[script]],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return losses(done.stdout)


@pytest.mark.parametrize("script", list(EXAMPLES))
def test_torchrun_c10d_rendezvous_across_two_hosts_matches_one_host(two_namespaces, script):
    if script == "megatron_gpt.py":
        pytest.importorskip("megatron.core")
    endpoint = f"{two_namespaces.addresses[0]}:29400"
    job = uuid.uuid4().hex[:8]
    env = {**os.environ, **UCX_ENV}
    logs = [tempfile.TemporaryFile(mode="w+") for _ in two_namespaces]
    agents = [
        subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-m", "torch.distributed.run",
             "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
             "--rdzv-endpoint", endpoint, "--rdzv-id", job, "--local-addr", address,
             # torchrun knows the endpoint is its own by the host's name; this one is the
             # address of a second interface, so the host that serves it is told. A host whose
             # partner failed gives up in two minutes, not torchrun's ten.
             "--rdzv-conf", f"is_host={int(host == 0)},join_timeout=120",
             str(ROOT / "examples" / script), *EXAMPLES[script]],
            stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
        for host, (namespace, address, log) in enumerate(zip(two_namespaces,
                                                             two_namespaces.addresses, logs))]
    try:
        codes = [agent.wait(timeout=600) for agent in agents]
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.terminate()  # the fixture kills what is left in the namespaces
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    said = "\n".join(f"host {i}: rc {rc}\n{out[-4000:]}"
                     for i, (rc, out) in enumerate(zip(codes, outputs)))
    assert all(rc == 0 for rc in codes), said
    across = [step for out in outputs for step in losses(out)]
    want = one_host(script)
    assert [n for n, _ in across] == [n for n, _ in want] == [1, 2, 3], said
    for (_, got), (_, expected) in zip(across, want):
        assert abs(got - expected) <= 1e-5 * max(abs(expected), 1.0), (across, want)
