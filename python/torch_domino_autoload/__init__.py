"""Registers the ``"domino"`` torch.distributed backend when ``import torch`` loads its backend
entry points (the ``torch.backends`` group, since torch 2.5), so that launchers and frameworks
that take a backend by name (Ray Train's ``TorchConfig(backend="domino")``, Lightning's
``process_group_backend``, a config file) work with no ``import torch_domino``.

This module is apart from ``torch_domino`` so that ``import torch`` pays for a registration only:
the backend's library loads when the first ``"domino"`` group is created. A failure here warns
and never breaks ``import torch``; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns every entry point
off, this one included.
"""

from __future__ import annotations

import warnings

BACKEND_NAME = "domino"


def _create(dist_options, backend_options):
    import torch_domino

    return torch_domino._create_backend(dist_options, backend_options)


def register(strict: bool = False) -> None:
    """Registers ``"domino"`` for ``cpu`` and ``cuda`` devices, once. Raises where ``strict``,
    else warns: torch turns an entry point's exception into a failed ``import torch``."""
    try:
        import torch.distributed as dist

        if not dist.is_available() or BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
            return
        # torch 2.15 hooks a recorder of its own onto backends that record nothing themselves;
        # domino records every op with its real state, and two rings would cost twice.
        self_recording = getattr(dist.distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", None)
        if isinstance(self_recording, set):
            self_recording.add(BACKEND_NAME)
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True,
                                      devices=["cpu", "cuda"])
    except Exception as error:
        if strict:
            raise
        warnings.warn(f"torch-domino: the {BACKEND_NAME!r} backend was not registered when torch "
                      f"loaded its backends ({error!r}); `import torch_domino` registers it, or "
                      "reports why not", RuntimeWarning, stacklevel=2)
