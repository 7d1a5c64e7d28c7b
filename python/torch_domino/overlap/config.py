"""The shape and schedule of a Domino transformer: ``TransformerConfig`` is the C++ struct
(``overlap/TransformerConfig.h``) itself, whose field list is the one definition of its fields,
their defaults and their meaning. ``TransformerConfig.fields()`` lists them.

``split``: ``"row"`` (micro-batches), ``"column"`` (column chunks of the row-parallel outputs; the
hidden state stays in those column parts, and the next norm and GEMM start on each part as soon
as it is summed), ``"2d"`` (both) or ``"none"`` (the Megatron-style baseline: nothing cut, every
all-reduce waited at once). ``overlap``: ``"intra"`` hides reductions inside each layer,
``"inter"`` also lets the last micro-batch's MLP reduction run under the next layer's attention.
``micro_batches`` and ``overlap`` left as ``None`` follow the split: 2 and ``"inter"`` for row
and 2d, 1 and ``"inter"`` for column, 1 and ``"intra"`` for none. ``sequence_parallel=True``
keeps the hidden state between blocks cut along the sequence (``[s/tp, b, h]`` per rank), as
Megatron's sequence parallelism does. ``recompute=True`` (``DominoTransformer`` in training)
keeps only each layer's input and recomputes the layer in backward, with the same dropout masks.
"""

from __future__ import annotations

from .. import _C

TransformerConfig = _C.overlap.TransformerConfig
TransformerConfig.__module__ = __name__
