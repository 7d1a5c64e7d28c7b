"""Trains a small GPT whose transformer is a DominoTransformer, tensor-parallel over all ranks.

    torchrun --nproc-per-node 2 examples/train_gpt.py --steps 30 --tp-mode domino

The text is this repository's own documentation and sources, read as bytes (a 256-symbol
vocabulary, so there is no tokenizer to install). Every rank draws the same batches: all ranks
form one tensor-parallel group, so the loss is the same on every rank and rank 0 prints it.

``--tp-mode naive`` runs the same model Megatron-style (``split="none"``: one micro-batch, each row-parallel
all-reduce waited at once); ``domino`` cuts the batch and the outputs and overlaps the
reductions. Both start from the same weights and see the same data, so their losses agree step
for step within float tolerance; only the time differs.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import torch_domino
from torch_domino.overlap import DominoTransformer, TransformerConfig

TEXT_SUFFIXES = {".md", ".txt", ".py", ".h", ".cpp", ".c", ".cmake"}


def corpus() -> torch.Tensor:
    """This repository's docs and sources as bytes; torch's own sources if run elsewhere."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "README.md").exists():
        root = Path(torch.__file__).resolve().parent / "nn"
    files = sorted(p for p in root.rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file()
                   and not any(part.startswith((".", "build")) for part in p.relative_to(root).parts))
    data = b"\n".join(p.read_bytes() for p in files)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


class TinyGPT(nn.Module):
    def __init__(self, config: TransformerConfig, seq_len: int, group=None):
        super().__init__()
        # Replicated on every TP rank, initialised from the same seed.
        generator = torch.Generator().manual_seed(config.seed)
        self.embed = nn.Parameter(torch.randn(256, config.hidden_size, generator=generator) * 0.02)
        self.position = nn.Parameter(torch.randn(seq_len, config.hidden_size, generator=generator) * 0.02)
        self.transformer = DominoTransformer(config, group)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # tokens [b, s]
        hidden = self.embed[tokens.t()] + self.position[: tokens.size(1)].unsqueeze(1)  # [s, b, h]
        hidden = self.transformer(hidden)
        return hidden @ self.embed.t()  # tied LM head, [s, b, 256]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--tp-mode", choices=["domino", "naive"], default="domino")
    parser.add_argument("--split", choices=["row", "column", "2d"], default="row")
    parser.add_argument("--micro-batches", type=int, default=2)
    parser.add_argument("--column-chunks", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group(torch_domino.BACKEND_NAME)
    rank, world = dist.get_rank(), dist.get_world_size()

    domino = args.tp_mode == "domino"
    # Dropout masks come from the default generator, as torch.nn.Dropout's do: seeded alike, the
    # two modes drop the same elements (rank 0's pass seeds are the group's).
    torch.manual_seed(args.seed)
    config = TransformerConfig(
        hidden_size=args.hidden, num_attention_heads=args.heads, num_layers=args.layers,
        activation="swiglu", normalization="rmsnorm", rotary=True, bias=False,
        hidden_dropout=args.dropout, attention_dropout=args.dropout, seed=args.seed,
        split=args.split if domino else "none",
        micro_batches=(args.micro_batches if args.split != "column" else 1) if domino else None,
        column_chunks=(args.column_chunks if args.split != "row" else 1) if domino else 1,
    )
    model = TinyGPT(config, args.seq)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    data = corpus()
    sampler = torch.Generator().manual_seed(args.seed)  # same batches on every TP rank
    if rank == 0:
        print(f"# {args.tp_mode} TP={world} split={config.split} micro_batches={config.micro_batches or 1} "
              f"column_chunks={config.column_chunks} corpus={data.numel()} bytes", flush=True)

    for step in range(1, args.steps + 1):
        starts = torch.randint(0, data.numel() - args.seq - 1, (args.batch,), generator=sampler)
        window = torch.stack([data[s : s + args.seq + 1] for s in starts.tolist()])
        inputs, targets = window[:, :-1], window[:, 1:]
        began = time.perf_counter()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, 256), targets.t().reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - began
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f} tokens/s {args.batch * args.seq / elapsed:.0f}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
