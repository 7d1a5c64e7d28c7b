"""Megatron-Core 0.16 on a machine without a GPU: the one place the tests, the example and the
benchmark adapt it. Megatron-Core's documented switches come first (``use_cpu_initialization``
in the config, the inference RNG tracker); what its code still does on the current CUDA device
is redirected here, nothing else:

- ``torch.cuda.current_device()`` answers ``"cpu"``: Megatron allocates on it in the
  tensor-parallel mappings (sequence parallelism's gathers), the rotary embedding's frequencies
  and dist_checkpointing's failure flag;
- the global memory buffer (scratch for attention and the sequence-parallel gather) allocates
  on the CPU;
- dist_checkpointing's writer preloads tensors blocking (it synchronizes CUDA after a
  non-blocking copy);
- the checkpoint of full-layer recompute (``recompute_granularity="full"``) saves and restores
  no CUDA generator state (there is no CUDA generator): it keeps saving and restoring the CPU
  generator's, which the Domino layer draws its dropout seed from.

Call ``use_cpu()`` after ``parallel_state.initialize_model_parallel``. It refuses to run where
CUDA is available: there Megatron-Core needs none of it.
"""

from __future__ import annotations

import torch


def use_cpu() -> None:
    if torch.cuda.is_available():
        raise RuntimeError("torch_domino.megatron.cpu.use_cpu: CUDA is available here; "
                           "Megatron-Core runs on it unchanged, without these adaptations")
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.utils import GlobalMemoryBuffer

    torch.cuda.current_device = lambda: "cpu"
    # Megatron's documented CPU switch: the RNG tracker without CUDA generator states.
    tensor_parallel.random.initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)
    # Full recompute's CheckpointFunction reads the CUDA generator's state whatever the device
    # (torch.cuda.get_rng_state, which fails without a driver) beside the CPU generator's.
    tensor_parallel.random._get_cuda_rng_state = lambda *args, **kwargs: None
    tensor_parallel.random._set_cuda_rng_state = lambda *args, **kwargs: None

    class CpuMemoryBuffer(GlobalMemoryBuffer):
        def get_tensor(self, tensor_shape, dtype, name, mem_alloc_context=None):
            numel = 1
            for d in tensor_shape:
                numel *= d
            buffer = self.buffer.get((name, dtype))
            if buffer is None or buffer.numel() < numel:
                buffer = self.buffer[(name, dtype)] = torch.empty(numel, dtype=dtype)
            return buffer[:numel].view(*tensor_shape)

    parallel_state._GLOBAL_MEMORY_BUFFER = CpuMemoryBuffer()

    from megatron.core.dist_checkpointing.strategies import filesystem_async
    preload = filesystem_async.FileSystemWriterAsync.preload_tensors
    if not getattr(preload, "_domino_blocking", False):
        def preload_blocking(write_buckets, non_blocking=True):
            return preload(write_buckets, non_blocking=False)
        preload_blocking._domino_blocking = True
        filesystem_async.FileSystemWriterAsync.preload_tensors = staticmethod(preload_blocking)
