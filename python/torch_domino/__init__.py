"""torch-domino: the ``"domino"`` torch.distributed backend and Domino tensor-parallel layers.

Importing this package registers the backend for ``cpu`` and ``cuda`` devices, so
``torch.distributed.init_process_group("domino")`` works, as do device maps such as
``"cpu:domino,cuda:domino"`` and ``"cpu:gloo,cuda:domino"``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch
import torch.distributed as dist

import torch_domino_autoload as _autoload

from . import _C, _shrink
from ._C import Options, ProcessGroupDomino, algorithms

__all__ = [
    "Options",
    "ProcessGroupDomino",
    "BACKEND_NAME",
    "cmake_prefix_path",
    "priority",
    "handles",
    "topology",
    "algorithms",
    "dump_flight_recorder",
]

BACKEND_NAME = _autoload.BACKEND_NAME

#: Directory to put on CMAKE_PREFIX_PATH so ``find_package(Domino)`` finds this installation.
cmake_prefix_path = str(Path(__file__).resolve().parent / "share" / "cmake")


@contextlib.contextmanager
def priority(level: str):
    """Collectives issued by this thread inside the block, on domino groups, use lane `level`.

    ``"high"`` for tensor-parallel all-reduces on the critical path, ``"low"`` for bulk traffic
    such as data-parallel gradient buckets (it pauses at chunk boundaries while a higher lane
    has work), ``"normal"`` otherwise. Thread-local; blocks nest.
    """
    guard = _C._PriorityGuard(level)
    try:
        yield
    finally:
        guard.release()


class handles:
    """Collects every Work issued on a domino group by this thread inside the block.

    Leaving the block waits for all of them and raises the first error. A handle the code
    dropped unwaited is still waited, so no tensor is freed while in flight. If the block
    raises, the handles are still waited and the block's exception propagates. Scopes nest; a
    handle belongs to the innermost. ``scope.wait()`` waits early::

        with torch_domino.handles() as scope:
            dist.all_reduce(a, async_op=True)
            dist.all_reduce(b, async_op=True)
        # both done here
    """

    def __init__(self) -> None:
        self._scope = None

    def __enter__(self) -> "handles":
        self._scope = _C._HandleScope()
        self._scope.open()
        return self

    def wait(self) -> None:
        if self._scope is not None:
            self._scope.wait()

    def __len__(self) -> int:
        return len(self._scope) if self._scope is not None else 0

    def __exit__(self, exc_type, exc, tb) -> bool:
        scope, self._scope = self._scope, None
        scope.close(raise_error=exc_type is None)
        return False


def dump_flight_recorder(path: str | None = None, only_active: bool = False) -> bytes:
    """This process's Flight Recorder buffer: every op of every domino group it recorded (set
    ``TORCH_FR_BUFFER_SIZE=N`` before the groups are made), pickled in the form
    ``python -m torch.distributed.flight_recorder.fr_trace`` reads, and written to ``path`` if
    given. Name the file of each rank ``<prefix><global rank>``, as the automatic dump on a
    failure does (``TORCH_FR_DUMP_TEMP_FILE`` + rank). ``only_active`` leaves completed ops out.
    Without ``TORCH_FR_BUFFER_SIZE`` the dump holds no entries."""
    data = _C._dump_flight_recorder(only_active)
    if path is not None:
        Path(path).write_bytes(data)
    return data


def _create_backend(dist_options, backend_options):
    options = backend_options if isinstance(backend_options, Options) else Options()
    options._timeout = dist_options.timeout
    options.group_name = dist_options.group_id
    options.global_ranks_in_group = list(dist_options.global_ranks_in_group)
    return ProcessGroupDomino(
        dist_options.store, dist_options.group_rank, dist_options.group_size, options
    )


# `import torch` has usually registered it already (torch_domino_autoload); the creator is the
# same either way.
_autoload.register(strict=True)
_shrink.install(BACKEND_NAME)

from ._topology import topology  # noqa: E402  (needs the backend registered)
from . import overlap  # noqa: E402,F401
