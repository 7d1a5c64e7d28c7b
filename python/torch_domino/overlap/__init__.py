"""Domino tensor-parallel layers (arXiv 2409.15241), implemented in C++ (``overlap/``).

Each layer shards its weights over a tensor-parallel process group (any c10d group: gloo, nccl,
domino) and hides its all-reduces behind compute: the batch is cut into micro-batches
(``split="row"``), the row-parallel outputs into column chunks (``split="column"``), or both
(``split="2d"``), and the reduction of one slice runs while the next computes. On a domino group
the reductions use the high-priority lane. Layout is ``[s, b, h]``, as in Megatron.

- ``config``: ``TransformerConfig``;
- ``layers``: the modules (``DominoTransformer`` ... ``RowParallelLinear``), with a class of
  every layer type registered in C++ (``overlap/LayerTypes.h``);
- ``checkpoint``: how ``state_dict()`` holds their shards (DTensors, as DCP needs them);
- ``hf``: Hugging Face models in and out.
"""

from . import layers as _layers
from .checkpoint import hook_optimizer, sharded_state_dict
from .config import TransformerConfig
from .hf import from_hf, to_hf_state_dict
from .layers import (ColumnParallelLinear, DominoTransformer, DominoTransformerLayer,
                     RowParallelLinear)

# The registered layer types (overlap/LayerTypes.h): ShardedAttention, ParallelMLP and any added.
globals().update({name: getattr(_layers, name) for name in _layers.LAYER_TYPES})

__all__ = [
    "TransformerConfig",
    "DominoTransformer",
    "DominoTransformerLayer",
    *_layers.LAYER_TYPES,
    "ColumnParallelLinear",
    "RowParallelLinear",
    "sharded_state_dict",
    "hook_optimizer",
    "from_hf",
    "to_hf_state_dict",
]
