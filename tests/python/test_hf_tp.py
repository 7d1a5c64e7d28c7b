"""Hugging Face's own tensor parallelism over domino: examples/hf_tp_generate.py loads a small
Llama with from_pretrained(tp_plan="auto") under torchrun, which shards it with DTensor over the
domino group, and generates greedily; --check compares the greedy tokens and the logits with
the same model in one process (real transformers and accelerate, pinned in
scripts/requirements.txt)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ranks import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tp_plan_auto_generates_what_one_process_generates(dtype):
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-port", str(free_port()), str(ROOT / "examples" / "hf_tp_generate.py"),
         "--dtype", dtype, "--new-tokens", "16", "--repeats", "1", "--check"],
        capture_output=True, text=True, timeout=600)
    said = done.stdout[-4000:] + done.stderr[-4000:]
    assert done.returncode == 0, said
    assert "check: greedy tokens equal" in done.stdout, said
    tokens = re.findall(rf"rank (\d) of 2: {dtype} tokens (\[[^\]]*\])", done.stdout)
    assert sorted(rank for rank, _ in tokens) == ["0", "1"], said
    assert tokens[0][1] == tokens[1][1], said  # both ranks hold the whole output
    assert re.search(rf"domino world 2 {dtype}: [0-9.]+ tokens/s", done.stdout), said
