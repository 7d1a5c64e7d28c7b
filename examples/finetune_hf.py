"""Fine-tunes a Hugging Face causal LM with its decoder stack as Domino layers, tensor-parallel
over all ranks.

    torchrun --nproc-per-node 2 examples/finetune_hf.py --model DIR --steps 20

DIR is a model directory written by ``save_pretrained`` (Llama, Mistral or Qwen2), read with
``AutoModelForCausalLM.from_pretrained``: no hub access. The decoder layers and final norm become
a ``DominoTransformer`` (``torch_domino.overlap.from_hf``) holding this rank's shards; the token
embedding and the LM head stay whole on every rank, where their gradients come out equal
without communication (the Domino layers all-reduce what reaches them). The text is this
repository's documentation and sources as bytes, taken modulo the vocabulary. Rank 0 prints the
model's own loss on the first batch (``hf_loss X``), then ``step N loss X`` per step: the first
step's loss equals the model's own.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

import torch_domino  # noqa: F401  registers "domino"
from torch_domino.overlap import from_hf

TEXT_SUFFIXES = {".md", ".txt", ".py", ".h", ".cpp"}


def corpus(vocab: int) -> torch.Tensor:
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for p in root.rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file()
                   and not any(part.startswith((".", "build")) for part in p.relative_to(root).parts))
    data = b"\n".join(p.read_bytes() for p in files)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long() % vocab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a save_pretrained directory")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--split", default="row")
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    dist.init_process_group("domino")
    rank = dist.get_rank()
    hf = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).train()
    domino = from_hf(hf, split=args.split).train()
    embed, head = hf.get_input_embeddings(), hf.get_output_embeddings()
    params = list(domino.parameters()) + list(embed.parameters()) + [
        p for p in head.parameters() if all(p is not q for q in embed.parameters())]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    data = corpus(hf.config.vocab_size)
    sampler = torch.Generator().manual_seed(0)  # the same batches on every rank

    for step in range(1, args.steps + 1):
        starts = torch.randint(0, data.numel() - args.seq - 1, (args.batch,), generator=sampler)
        window = torch.stack([data[s : s + args.seq + 1] for s in starts.tolist()])
        inputs, targets = window[:, :-1], window[:, 1:]
        if step == 1 and rank == 0:  # the model itself, before any step, on the same batch
            with torch.no_grad():
                logits = hf.eval()(input_ids=inputs).logits
            hf.train()
            reference = F.cross_entropy(logits.reshape(-1, hf.config.vocab_size), targets.reshape(-1))
            print(f"hf_loss {reference.item():.6f}", flush=True)
        hidden = domino(embed(inputs).transpose(0, 1))  # [s, b, h]
        logits = head(hidden.transpose(0, 1))
        loss = F.cross_entropy(logits.reshape(-1, hf.config.vocab_size), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
    # The embedding and LM head are whole on every rank: equal gradients kept them equal.
    replicated = torch.stack([p.detach().double().sum() for p in embed.parameters()] +
                             [p.detach().double().sum() for p in head.parameters()])
    gathered = [torch.empty_like(replicated) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, replicated)
    if rank == 0:
        print(f"replicated weights equal on every rank: "
              f"{all(torch.equal(g, gathered[0]) for g in gathered)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
