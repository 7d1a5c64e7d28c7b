"""Keeps a shrunk domino group a custom backend's group.

torch's dist.shrink_group registers the new group's backend under Gloo's type on CPU (NCCL's on
a bound CUDA device), whatever the backend is (torch 2.10 to 2.14 at least). DDP's logger then
casts a "gloo" group's backend to ProcessGroupGloo, so DDP built over a shrunk domino group
crashes the process. Registering the backend again as what it is, a custom backend for CPU and
CUDA as init_process_group registers it, puts that right; for any other backend nothing changes.
"""

from __future__ import annotations

import functools

import torch
import torch.distributed.distributed_c10d as c10d


def install(backend_name: str) -> None:
    original = getattr(c10d, "_create_shrunk_process_group", None)
    if original is None or getattr(original, "_domino_wrapped", False):
        return

    @functools.wraps(original)
    def create_shrunk_process_group(new_backend, remaining_ranks, metadata, is_default_group):
        pg = original(new_backend, remaining_ranks, metadata, is_default_group)
        if metadata.get("backend_name") == backend_name:
            custom = c10d.ProcessGroup.BackendType.CUSTOM
            for device in ("cpu", "cuda"):
                pg._register_backend(torch.device(device), custom, new_backend)
            pg._set_default_backend(custom)
        return pg

    create_shrunk_process_group._domino_wrapped = True
    c10d._create_shrunk_process_group = create_shrunk_process_group
