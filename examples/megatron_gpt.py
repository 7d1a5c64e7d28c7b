"""Trains a Megatron-Core GPTModel whose transformer layers are Domino layers, with tensor and
sequence parallelism over all ranks:

    torchrun --nproc-per-node 2 examples/megatron_gpt.py --steps 20

Megatron-Core keeps its embedding, rotary embedding, final norm, output layer and vocab-parallel
loss; get_gpt_layer_domino_spec() puts a DominoLayer in every transformer layer. The text is this
repository's own documentation and sources, read as bytes (a 256-symbol vocabulary). Every rank
draws the same batches, as one tensor-parallel group must; rank 0 prints each step's loss and
tokens/s. ``--spec local`` runs Megatron-Core's own layers instead, for comparison. On a machine
without a GPU, torch_domino.megatron.cpu adapts Megatron-Core to run on the CPU.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn.functional as F

import torch_domino
from train_gpt import corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--spec", choices=["domino", "local"], default="domino")
    parser.add_argument("--split", choices=["row", "column", "2d", "none"], default="row")
    parser.add_argument("--micro-batches", type=int, default=2)
    parser.add_argument("--column-chunks", type=int, default=2)
    parser.add_argument("--no-sequence-parallel", action="store_true")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", module="megatron")
    # Megatron-Core calls torch.distributed.all_gather_into_tensor, which torch 2.14 renamed.
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch.distributed")
    dist.init_process_group(torch_domino.BACKEND_NAME)
    rank, world = dist.get_rank(), dist.get_world_size()

    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    from torch_domino.megatron import SequenceParallelNorm, get_gpt_layer_domino_spec

    parallel_state.initialize_model_parallel(tensor_model_parallel_size=world)
    if not torch.cuda.is_available():
        from torch_domino.megatron.cpu import use_cpu
        use_cpu()
    config = TransformerConfig(
        num_layers=args.layers, hidden_size=args.hidden, num_attention_heads=args.heads,
        num_query_groups=max(world, args.heads // 2), ffn_hidden_size=(8 * args.hidden) // 3 // 64 * 64 or 64,
        normalization="RMSNorm", activation_func=F.silu, gated_linear_unit=True,
        add_bias_linear=False, hidden_dropout=0.0, attention_dropout=0.0,
        use_cpu_initialization=True, tensor_model_parallel_size=world,
        sequence_parallel=world > 1 and not args.no_sequence_parallel)
    if args.spec == "domino":
        spec = get_gpt_layer_domino_spec(split=args.split, micro_batches=args.micro_batches
                                         if args.split in ("row", "2d") else 1,
                                         column_chunks=args.column_chunks
                                         if args.split in ("column", "2d") else 1, config=config)
    else:
        spec = get_gpt_layer_local_spec(normalization=config.normalization)
        if config.sequence_parallel:  # Megatron's torch norm refuses it without TE or Apex
            from megatron.core.transformer.transformer_block import TransformerBlockSubmodules
            spec.submodules.input_layernorm = SequenceParallelNorm
            spec.submodules.pre_mlp_layernorm = SequenceParallelNorm
            spec = TransformerBlockSubmodules(layer_specs=[spec] * args.layers,
                                              layer_norm=SequenceParallelNorm)
    torch.manual_seed(args.seed)  # the same weights on every rank, as Megatron's CPU init needs
    model = GPTModel(config=config, transformer_layer_spec=spec, vocab_size=256,
                     max_sequence_length=args.seq, position_embedding_type="rope")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    data = corpus()
    sampler = torch.Generator().manual_seed(args.seed)  # the same batches on every rank
    positions = torch.arange(args.seq).unsqueeze(0).expand(args.batch, args.seq)
    mask = torch.ones(args.seq, args.seq, dtype=torch.bool).triu(1).view(1, 1, args.seq, args.seq)
    if rank == 0:
        print(f"# megatron-core GPTModel, {args.spec} spec, TP={world} "
              f"sequence_parallel={config.sequence_parallel} split={args.split} "
              f"corpus={data.numel()} bytes", flush=True)
    for step in range(1, args.steps + 1):
        starts = torch.randint(0, data.numel() - args.seq - 1, (args.batch,), generator=sampler)
        window = torch.stack([data[s:s + args.seq + 1] for s in starts.tolist()])
        began = time.perf_counter()
        loss = model(window[:, :-1], positions, mask, labels=window[:, 1:]).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - began
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f} tokens/s {args.batch * args.seq / elapsed:.0f}",
                  flush=True)
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
