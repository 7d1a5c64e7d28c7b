"""The README examples run: C++ through find_package(Domino), Python under torchrun."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torch_domino

from ranks import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cpp_example_builds_and_runs_two_ranks(tmp_path):
    build = tmp_path / "build"
    prefix = ";".join([torch_domino.cmake_prefix_path, torch.utils.cmake_prefix_path])
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    subprocess.run(
        ["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(build), *generator, *launcher,
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPython3_EXECUTABLE={sys.executable}"],
        check=True, capture_output=True, text=True,
    )
    built = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]

    port = str(free_port())
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port)
        env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        procs.append(subprocess.Popen([str(build / "allreduce")], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for rank, (proc, output) in enumerate(zip(procs, outputs)):
        assert proc.returncode == 0, output
        assert f"rank {rank} of 2: all_reduce gave 3 (expected 3) via shm" in output

    # The Domino layer from LibTorch alone, under torchrun: it exits 0 only if its loss fell.
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), "--no-python", str(build / "domino_layer")],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    losses = {}
    for rank in range(2):
        lines = re.findall(rf"rank {rank} of 2: step (\d) loss ([0-9.e-]+)", done.stdout)
        assert [int(step) for step, _ in lines] == [1, 2, 3, 4, 5], done.stdout
        losses[rank] = [float(loss) for _, loss in lines]
    assert losses[0] == losses[1]  # one tensor-parallel model: every rank sees the same loss


def test_python_example_runs_under_torchrun():
    port = str(free_port())
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", port, str(ROOT / "examples" / "python" / "all_reduce.py")],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for rank in range(2):
        assert f"rank {rank}/2: sum=3 avg=1 future=[4.0, 4.0, 4.0]" in done.stdout


def train_gpt(*args: str, script: str = "train_gpt.py") -> list[tuple[int, float, float]]:
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), str(ROOT / "examples" / script), *args],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = re.findall(r"^step (\d+) loss ([0-9.]+) tokens/s ([0-9]+)$", done.stdout, re.MULTILINE)
    return [(int(n), float(loss), float(rate)) for n, loss, rate in steps]


@pytest.mark.parametrize("split", ["row", "2d"])
def test_train_gpt_domino_matches_naive_step_for_step(split):
    common = ["--steps", "6", "--seq", "64", "--hidden", "64", "--dropout", "0.1"]
    domino = train_gpt(*common, "--tp-mode", "domino", "--split", split)
    naive = train_gpt(*common, "--tp-mode", "naive")
    assert [n for n, _, _ in domino] == [n for n, _, _ in naive] == [1, 2, 3, 4, 5, 6]
    for (_, a, _), (_, b, _) in zip(domino, naive):
        assert abs(a - b) <= 1e-4 * max(abs(b), 1.0), (domino, naive)
    assert domino[-1][1] < domino[0][1]  # it learns


def test_megatron_gpt_with_the_domino_spec_and_sequence_parallelism_learns():
    pytest.importorskip("megatron.core")
    common = ["--steps", "6", "--seq", "64", "--hidden", "64"]
    domino = train_gpt(*common, script="megatron_gpt.py")
    assert [n for n, _, _ in domino] == [1, 2, 3, 4, 5, 6], domino
    assert domino[-1][1] < domino[0][1] - 0.3  # it learns
    assert all(rate > 0 for _, _, rate in domino)


def test_finetune_hf_starts_at_the_models_own_loss_and_learns(tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                      num_attention_heads=8, num_key_value_heads=4, vocab_size=256)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "model")  # no hub
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), str(ROOT / "examples" / "finetune_hf.py"),
         "--model", str(tmp_path / "model"), "--steps", "8", "--split", "2d"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reference = float(re.search(r"^hf_loss ([0-9.]+)$", done.stdout, re.MULTILINE).group(1))
    losses = [float(x) for x in re.findall(r"^step \d+ loss ([0-9.]+)$", done.stdout, re.MULTILINE)]
    assert len(losses) == 8
    assert abs(losses[0] - reference) <= 1e-5 * reference, (reference, losses)
    assert losses[-1] < losses[0]  # it learns
    assert "replicated weights equal on every rank: True" in done.stdout


def test_elastic_ddp_survives_a_sigkill_and_matches_a_fresh_run():
    # 4 ranks, rank 3 SIGKILLed at step 10; the survivors shrink and go on to step 30, and their
    # losses equal a fresh 3-rank run from the state at step 10.
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "elastic_ddp.py")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "OK: after the shrink, losses equal a fresh 3-rank run from step 10" in done.stdout
    assert "step 10 failed" in done.stdout and "rank(s) 3" in done.stdout, done.stdout[-3000:]
