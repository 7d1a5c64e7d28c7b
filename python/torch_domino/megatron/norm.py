"""A final norm for Megatron-Core's TransformerBlock under sequence parallelism where Megatron's
own cannot take it (without Transformer Engine or Apex, its torch norm refuses
``sequence_parallel``)."""

from __future__ import annotations

import torch
import torch.distributed as dist
from megatron.core import parallel_state
import torch.nn.functional as F
from torch import nn


def megatron_norm_takes_sequence_parallel() -> bool:
    """Whether TransformerBlock's own norm (Transformer Engine's, Apex's, else torch's) serves
    sequence parallelism."""
    from megatron.core.transformer import transformer_block
    from megatron.core.transformer.torch_norm import WrappedTorchNorm
    return transformer_block.LayerNormImpl is not WrappedTorchNorm


class SequenceParallelNorm(nn.Module):
    """LayerNorm or RMSNorm (``config.normalization``) over this rank's rows of the sequence,
    with Megatron's names (``weight``, ``bias``). Each rank's gradient of the weights covers its
    rows only: they are summed over the tensor-parallel group in backward, here, as the Domino
    layers sum theirs (so the weights are not marked for ``finalize_model_grads``)."""

    def __init__(self, config, hidden_size: int, eps: float = 1e-5, **unused):
        super().__init__()
        self.rms = config.normalization == "RMSNorm"
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=config.params_dtype))
        self.bias = None if self.rms else nn.Parameter(
            torch.zeros(hidden_size, dtype=config.params_dtype))
        group = parallel_state.get_tensor_model_parallel_group()
        if config.sequence_parallel and dist.get_world_size(group) > 1:
            for param in self.parameters():
                param.register_hook(lambda grad, group=group: _summed(grad, group))

    def forward(self, x):
        shape = (self.weight.shape[0],)
        if self.rms:
            return F.rms_norm(x, shape, self.weight, self.eps)
        return F.layer_norm(x, shape, self.weight, self.bias, self.eps)


def _summed(grad: torch.Tensor, group) -> torch.Tensor:
    summed = grad.contiguous().clone()
    dist.all_reduce(summed, group=group)
    return summed
