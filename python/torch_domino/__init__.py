"""torch-domino: the ``"domino"`` torch.distributed backend and Domino tensor-parallel layers.

Importing this package registers the backend for ``cpu`` and ``cuda`` devices, so
``torch.distributed.init_process_group("domino")`` works, as do device maps such as
``"cpu:domino,cuda:domino"`` and ``"cpu:gloo,cuda:domino"``.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.distributed as dist

from . import _C
from ._C import Options, ProcessGroupDomino

__all__ = ["Options", "ProcessGroupDomino", "BACKEND_NAME", "cmake_prefix_path"]

BACKEND_NAME = "domino"

#: Directory to put on CMAKE_PREFIX_PATH so ``find_package(Domino)`` finds this installation.
cmake_prefix_path = str(Path(__file__).resolve().parent / "share" / "cmake")


def _create_backend(dist_options, backend_options):
    options = backend_options if isinstance(backend_options, Options) else Options()
    options._timeout = dist_options.timeout
    options.group_name = dist_options.group_id
    options.global_ranks_in_group = list(dist_options.global_ranks_in_group)
    return ProcessGroupDomino(
        dist_options.store, dist_options.group_rank, dist_options.group_size, options
    )


def _register() -> None:
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=["cpu", "cuda"]
    )


_register()
