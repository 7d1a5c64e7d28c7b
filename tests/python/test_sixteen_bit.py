"""bfloat16 and float16 all-reduces on one host give the bits of float32 accumulation rounded
once to nearest even, on every shared-memory path (direct, rsag, single-copy and the router's
choice), whatever reduction variant this CPU runs (test ReductionVariants holds the variants to
one another bit for bit)."""

from __future__ import annotations

import pytest

from ranks import assert_all_ok, run_ranks


@pytest.mark.parametrize("algo,world", [("direct", 3), ("rsag", 3), ("single_copy", 2),
                                        ("auto", 3)])
def test_sixteen_bit_all_reduces_round_once_on_every_shared_memory_path(algo, world):
    for failures in assert_all_ok(run_ranks(world, "sixteen_bit_all_reduces",
                                            env={"DOMINO_ALGO": algo}, timeout=300)):
        assert failures == []


@pytest.mark.parametrize("kernels,name", [("avx2", "avx2+f16c"), ("generic", "generic")])
def test_the_reduction_kernels_a_rank_chooses_give_the_same_bits(kernels, name):
    from torch_domino import _C

    runnable = _C.reduction_isa()  # this process has no group: the fastest this CPU runs
    if kernels == "avx2" and runnable == "generic":
        pytest.skip("this CPU has no AVX2")
    env = {"DOMINO_REDUCTION_KERNELS": kernels}
    assert assert_all_ok(run_ranks(2, "reduction_kernels_in_use", env=env)) == [name, name]
    for failures in assert_all_ok(run_ranks(2, "sixteen_bit_all_reduces", env=env, timeout=300)):
        assert failures == []
