"""Hugging Face tensor parallelism over domino: a Llama-architecture model loaded with
`from_pretrained(..., tp_plan="auto")`, which shards it with DTensor over the group
`init_process_group` made, then greedy generation.

    torchrun --nproc-per-node 2 examples/hf_tp_generate.py
    torchrun --nproc-per-node 2 examples/hf_tp_generate.py --dtype bfloat16 --check

With no `--model`, every rank makes the same small Llama (random weights, seeded, nothing
downloaded) in a temporary folder. `--check` also runs the same model in one process on rank 0 and exits 1 unless
the greedy tokens are equal and the logits agree (float32: to 1e-4; bfloat16: to 5% of the largest).
Prints decode tokens/s. `--backend fake` runs torch's no-op backend (every collective returns
at once, results wrong): the same compute with no communication, which bench/hf_tp compares
against to find the share of decode time a backend spends communicating.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def make_model(folder: str, seed: int) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1376,
                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                         max_position_embeddings=512, initializer_range=0.2)
    LlamaForCausalLM(config).save_pretrained(folder)


def init(backend: str) -> None:
    if backend == "fake":
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]), store=FakeStore())
    else:
        dist.init_process_group(backend)


def greedy(model, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    with torch.no_grad():
        return model.generate(prompt, max_new_tokens=new_tokens, do_sample=False,
                              min_new_tokens=new_tokens)


def logits_of(model, prompt: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(prompt).logits.float()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a saved Llama-architecture model folder")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="timed generations (best kept)")
    parser.add_argument("--backend", default="domino")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="compare with the same model in one process (rank 0)")
    parser.add_argument("--json", action="store_true", help="rank 0 also prints a JSON line")
    args = parser.parse_args()

    from transformers import AutoModelForCausalLM

    if args.backend == "fake" and args.check:
        parser.error("--check needs a backend that communicates")
    made = None
    folder = args.model
    if not folder:
        # Each rank makes the same seeded model in a folder of its own, before the group exists
        # (save_pretrained writes on rank 0 only once there is one).
        made = tempfile.TemporaryDirectory()
        folder = made.name
        make_model(folder, args.seed)
    init(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    dtype = DTYPES[args.dtype]
    model = AutoModelForCausalLM.from_pretrained(folder, tp_plan="auto", dtype=dtype)
    model.eval()
    vocab = model.config.vocab_size
    prompt = torch.randint(1, vocab, (1, args.prompt_tokens),
                           generator=torch.Generator().manual_seed(args.seed + 1))

    tokens = greedy(model, prompt, args.new_tokens)  # warm-up, and what every rank prints
    # A sharded forward: every rank takes part, for rank 0's check.
    logits = logits_of(model, prompt) if args.check else None
    best = float("inf")
    for _ in range(args.repeats):
        dist.barrier()
        start = time.perf_counter()
        greedy(model, prompt, args.new_tokens)
        best = min(best, time.perf_counter() - start)
    rate = args.new_tokens / best
    # Every rank has the whole logits and tokens: DTensor gathers the output projection.
    # One write per line: the ranks share torchrun's output.
    sys.stdout.write(f"rank {rank} of {world}: {args.dtype} tokens "
                     f"{tokens[0, args.prompt_tokens:].tolist()}\n")
    sys.stdout.flush()
    status = 0
    if rank == 0:
        print(f"{args.backend} world {world} {args.dtype}: {rate:.1f} tokens/s", flush=True)
        if args.check:
            single = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
            single.eval()
            want_tokens = greedy(single, prompt, args.new_tokens)
            want_logits = logits_of(single, prompt)
            tolerance = 1e-4 if dtype == torch.float32 else 5e-2
            scale = want_logits.abs().max().item()
            gap = (logits - want_logits).abs().max().item()
            same_tokens = torch.equal(tokens, want_tokens)
            print(f"check: greedy tokens {'equal' if same_tokens else 'DIFFER'}; logits differ by "
                  f"at most {gap:.2e} (of {scale:.2e}; tolerance {tolerance * scale:.2e})",
                  flush=True)
            if not same_tokens or gap > tolerance * scale:
                status = 1
        if args.json:
            print(json.dumps({"backend": args.backend, "world": world, "dtype": args.dtype,
                              "tokens_per_s": rate}), flush=True)
    flag = torch.tensor([status])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    dist.destroy_process_group()
    if made:
        made.cleanup()
    return int(flag.item())  # the no-op backend leaves it as this rank's own


if __name__ == "__main__":
    sys.exit(main())
