"""Domino layers for Megatron-Core users: a layer spec for ``GPTModel``.

    from torch_domino.megatron import get_gpt_layer_domino_spec
    model = GPTModel(config, transformer_layer_spec=get_gpt_layer_domino_spec(split="row"),
                     vocab_size=..., max_sequence_length=...)

The model keeps Megatron-Core's embedding, rotary embedding, final norm, output layer, loss and
``parallel_state`` groups; every transformer layer is a ``DominoLayer`` configured from the
``TransformerConfig``, over Megatron's tensor-parallel group (any c10d backend; on a domino
group its reductions take the high-priority lane).
"""

from __future__ import annotations

from typing import Optional

from megatron.core.transformer.spec_utils import ModuleSpec

from .config import domino_config
from .layer import DominoLayer
from .norm import SequenceParallelNorm, megatron_norm_takes_sequence_parallel

__all__ = ["get_gpt_layer_domino_spec", "DominoLayer", "SequenceParallelNorm", "domino_config"]


def get_gpt_layer_domino_spec(split: str = "row", micro_batches: Optional[int] = None,
                              column_chunks: int = 1, overlap: Optional[str] = None,
                              config=None):
    """What ``GPTModel`` takes as ``transformer_layer_spec``: every layer a ``DominoLayer``
    with this schedule (``split`` "row", "column", "2d" or "none"; ``micro_batches`` and
    ``column_chunks`` as in ``torch_domino.overlap.TransformerConfig``; ``overlap`` "intra", the
    only one inside Megatron-Core's TransformerBlock).

    Given the model's ``config``, a config the Domino layer cannot compute is refused here,
    with a ValueError naming the field and value (else when GPTModel builds the layers). Where
    Megatron-Core's final norm cannot take sequence parallelism (a machine without Transformer
    Engine or Apex, whose torch norm refuses it), ``config`` is needed with
    ``sequence_parallel=True``: the spec then brings the block's layers and a
    ``SequenceParallelNorm`` as its final norm."""
    spec = ModuleSpec(module=DominoLayer,
                      params={"split": split, "micro_batches": micro_batches,
                              "column_chunks": column_chunks, "overlap": overlap})
    if config is None:
        return spec
    domino_config(config, config.tensor_model_parallel_size, split, micro_batches, column_chunks,
                  overlap)
    if config.sequence_parallel and not megatron_norm_takes_sequence_parallel():
        from megatron.core.transformer.transformer_block import (TransformerBlockSubmodules,
                                                                 get_num_layers_to_build)
        return TransformerBlockSubmodules(layer_specs=[spec] * get_num_layers_to_build(config),
                                          layer_norm=SequenceParallelNorm)
    return spec
