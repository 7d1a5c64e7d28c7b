"""Drop-in: DDP (with a comm hook), FSDP2 and DTensor tensor parallelism train the same with
"domino" as with "gloo", within float reassociation."""

from __future__ import annotations

import pytest
import torch

from ranks import assert_all_ok, assert_all_reported, run_ranks


def close(a: list, b: list, tol: float) -> bool:
    return len(a) == len(b) and torch.allclose(torch.tensor(a), torch.tensor(b), rtol=tol, atol=tol)


def both(world: int, *args) -> tuple:
    domino = assert_all_ok(run_ranks(world, "train", *args, backend="domino"))
    gloo = assert_all_reported(run_ranks(world, "train", *args, backend="gloo"))
    return domino, gloo


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_twenty_steps_match_gloo(world):
    domino, gloo = both(world, "ddp", 20, "none")
    for rank in range(world):
        assert close(domino[rank], gloo[rank], 1e-5)
    assert close(domino[0], domino[-1], 0)  # replicas agree exactly


def test_ddp_fp16_compression_hook_matches_gloo():
    domino, gloo = both(2, "ddp", 5, "fp16")
    assert close(domino[0], gloo[0], 1e-3)
    assert close(domino[0], domino[1], 0)


def test_fsdp2_fully_shard_matches_gloo():
    domino, gloo = both(2, "fsdp2", 5)
    for rank in range(2):
        assert close(domino[rank], gloo[rank], 1e-5)


def test_dtensor_tensor_parallel_matches_gloo():
    domino, gloo = both(2, "tensor_parallel", 5)
    for rank in range(2):
        assert close(domino[rank], gloo[rank], 1e-5)
