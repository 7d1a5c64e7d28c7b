"""The shape and schedule of a Domino transformer."""

from __future__ import annotations

import dataclasses
from typing import Optional

from .. import _C

@dataclasses.dataclass
class TransformerConfig:
    """The shape and schedule of a Domino transformer (the same fields as the C++ struct).

    ``activation``: ``"gelu"`` (exact), ``"gelu_tanh"`` (GPT-2's) or ``"swiglu"``.
    ``split``: ``"row"`` (micro-batches), ``"column"`` (column chunks of the row-parallel
    outputs; the hidden state stays in those column parts, and the next norm and GEMM start on
    each part as soon as it is summed), ``"2d"`` (both) or ``"none"`` (the Megatron-style
    baseline: nothing cut, every all-reduce waited at once). ``overlap``: ``"intra"`` hides reductions inside each layer,
    ``"inter"`` also lets the last micro-batch's MLP reduction run under the next layer's
    attention. ``qkv_bias`` (``None``: as ``bias``) sets the q/k/v projection's bias alone, as
    Qwen2 has it. ``micro_batches`` and ``overlap`` left as ``None`` follow the split: 2 and
    ``"inter"`` for row and 2d, 1 and ``"inter"`` for column, 1 and ``"intra"`` for none.
    ``num_query_groups`` 0 means no GQA; ``ffn_hidden_size`` 0 means 4h (gelu) or 8h/3 rounded
    up to 64 (swiglu). ``recompute=True`` (``DominoTransformer`` in training) keeps only each
    layer's input and recomputes the layer in backward, Megatron-style, with the same dropout
    masks and values; each layer then finishes its reductions itself (as ``overlap="intra"``).
    """

    hidden_size: int
    num_attention_heads: int
    num_layers: int = 1
    num_query_groups: int = 0
    ffn_hidden_size: int = 0
    activation: str = "gelu"
    normalization: str = "layernorm"
    rotary: bool = False
    rotary_base: float = 10000.0
    bias: bool = True
    qkv_bias: Optional[bool] = None
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0
    params_dtype: str = "float32"
    split: str = "row"
    micro_batches: Optional[int] = None
    column_chunks: int = 1
    overlap: Optional[str] = None
    norm_epsilon: float = 1e-5
    init_std: float = 0.02
    seed: int = 1234
    recompute: bool = False

    def __post_init__(self) -> None:
        if self.micro_batches is None:
            self.micro_batches = 1 if self.split in ("column", "none") else 2
        if self.overlap is None:
            self.overlap = "intra" if self.split == "none" else "inter"

    def validate(self, tensor_parallel: int, batch_size: int = 0) -> int:
        """Raises ValueError naming the field that cannot be sharded; returns the FFN size."""
        return _C.overlap.validate_transformer_config(dataclasses.asdict(self), tensor_parallel,
                                                      batch_size)


