"""What a DominoTransformer keeps for backward, with and without sequence parallelism: the bytes
of the distinct storages autograd saves during one training forward pass, per rank, at
tensor-parallel sizes 1, 2 and 4 (ranks on one host, the domino backend).

    python bench/overlap/activation_memory.py     # writes bench/results/activation_memory.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHAPE = dict(hidden_size=256, num_attention_heads=8, num_layers=2, activation="gelu",
             normalization="layernorm", hidden_dropout=0.1, attention_dropout=0.1)


def worker(rank: int, world: int, store: str, seq: int, batch: int) -> None:
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401
    from torch_domino.overlap import DominoTransformer, TransformerConfig

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"file://{store}", rank=rank, world_size=world)
    result = {}
    for split in ("row", "none"):
        for sp in (False, True):
            model = DominoTransformer(TransformerConfig(**SHAPE, split=split,
                                                        sequence_parallel=sp)).train()
            rows = seq // world if sp else seq
            x = torch.randn(rows, batch, SHAPE["hidden_size"], requires_grad=True)
            storages = {}

            def pack(t):
                storage = t.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
                return t

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                out = model(x)
            out.sum().backward()
            result[f"{split},{int(sp)}"] = sum(storages.values())
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(result))


def run(world: int, seq: int, batch: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(rank), str(world), store,
                                   str(seq), str(batch)], stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, OMP_NUM_THREADS="1"))
                 for rank in range(world)]
        outputs = [p.communicate(timeout=600)[0] for p in procs]
    return json.loads(outputs[0].strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*(int(a) if a.isdigit() else a for a in sys.argv[2:]))  # type: ignore[arg-type]
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "activation_memory.md"))
    args = parser.parse_args()
    results = {world: run(world, args.seq, args.batch) for world in (1, 2, 4)}
    mib = lambda b: f"{b / 2**20:.2f}"
    lines = ["# Activations saved for backward, per rank", "",
             f"DominoTransformer, {SHAPE['num_layers']} layers, h={SHAPE['hidden_size']}, "
             f"{SHAPE['num_attention_heads']} heads, gelu, LayerNorm, dropout 0.1, s={args.seq}, "
             f"b={args.batch}, fp32: the bytes of the distinct storages autograd saves in one "
             "training forward pass (MiB).", "",
             "| split | TP | without sequence parallelism | with | with / without |",
             "|---|---|---|---|---|"]
    for split in ("row", "none"):
        for world, by in results.items():
            without, with_sp = by[f"{split},0"], by[f"{split},1"]
            lines.append(f"| {split} | {world} | {mib(without)} | {mib(with_sp)} | "
                         f"{with_sp / without:.2f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
