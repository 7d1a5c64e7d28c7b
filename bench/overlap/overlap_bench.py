"""Per-layer step time (forward + backward) of Domino layers at TP=2: naive Megatron-style TP,
Domino for each split, and a no-communication bound (same compute, all-reduces removed).

The two ranks sit on two simulated hosts: network namespaces joined by a veth pair whose link
is shaped with tc (token bucket), so that naive TP spends 30-50% of its step communicating; the
rate is calibrated to land there. The group is the domino backend (UCX over TCP on the link; the
layers' reductions take its high lane), or with --backend gloo gloo over TCP with one gloo thread
so reductions leave in issue order. Without
namespaces (not root, no `ip`/`tc`), it says so and runs both ranks on this host over loopback.
The "no-comm" rows are the Domino schedules with the reductions removed: the cost of cutting
the batch and the weights, without communication.

    sudo python bench/overlap/overlap_bench.py            # writes bench/results/overlap.{csv,md,png}

It then profiles one more step of naive TP, Domino row split and Domino column split on each
rank with torch.profiler, and draws them one above the other (overlap_timeline.png): per
thread, the compute (the aten ops of the step) and the communication (the backend's domino:<op>
events, on the lanes where the reductions run), so a reader sees which reductions hide behind
compute and which the step waits for.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
import time
import tempfile
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from shaped_link import ShapedLink, run_pair  # noqa: E402

MODES = [
    # name, split, micro_batches, column_chunks, overlap, communication
    ("naive", "none", 1, 1, "intra", True),
    ("domino-row", "row", 2, 1, "inter", True),
    ("domino-column", "column", 1, 2, "inter", True),
    ("domino-column-4", "column", 1, 4, "inter", True),
    ("domino-row-4", "row", 4, 1, "inter", True),
    ("domino-2d", "2d", 2, 2, "inter", True),
    ("no-communication bound", "none", 1, 1, "intra", False),
    ("domino-row no-comm", "row", 2, 1, "inter", False),
    ("domino-2d no-comm", "2d", 2, 2, "inter", False),
    ("domino-row sp", "row", 2, 1, "inter", True),
]
# Megatron-Core's GPT layers against the Domino spec's, in a Megatron TransformerBlock of the
# same shape (gelu, LayerNorm, biases, 4h MLP): the Domino paper's own comparison. Name: (spec,
# sequence parallelism).
MEGATRON_MODES = {
    "megatron-local": ("local", False),
    "megatron-domino": ("domino", False),
    "megatron-local sp": ("local", True),
    "megatron-domino sp": ("domino", True),
}
TIMELINE_MODES = ["naive", "domino-row", "domino-column", "domino-2d"]
# Mode against baseline, compared step by step: the modes take turns, so each step of one has a
# step of the other next to it under the same machine speed, a finer test than two medians.
PAIRED = [("domino-2d", "domino-row"), ("domino-column", "naive"), ("domino-row", "naive"),
          ("domino-row sp", "domino-row"), ("megatron-domino", "megatron-local"),
          ("megatron-domino sp", "megatron-local sp")]
STEP_EVENT = "overlap_step"


def launch(link: ShapedLink, args, mode_names: list[str], trace_dir: str = "") -> dict:
    port = 29700 + int(time.time()) % 200
    argv = lambda rank, master: [
        __file__, "--worker", "--rank", str(rank), "--master", master, "--port", str(port),
        "--modes", ",".join(mode_names), "--steps", str(args.steps), "--hidden", str(args.hidden),
        "--seq", str(args.seq), "--batch", str(args.batch), "--layers", str(args.layers),
        "--gloo-threads", str(args.gloo_threads), "--backend", args.backend, "--trace-dir", trace_dir]
    return run_pair(link, argv, timeout=1200)


def worker(args) -> None:
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401
    from torch_domino.overlap import DominoTransformer, TransformerConfig

    torch.set_num_threads(1)
    options = None
    if args.backend == "gloo":
        options = dist.ProcessGroupGloo._Options()
        # One gloo thread: reductions leave in the order issued instead of splitting the link,
        # so the first one a micro-batch waits for finishes first.
        options._threads = args.gloo_threads
    dist.init_process_group(args.backend, init_method=f"tcp://{args.master}:{args.port}",
                            rank=args.rank, world_size=2, pg_options=options)
    x = torch.randn(args.seq, args.batch, args.hidden, generator=torch.Generator().manual_seed(0))
    rows = x.shape[0] // 2
    mine = x[args.rank * rows:(args.rank + 1) * rows].contiguous()  # this rank's sequence rows
    models, inputs = {}, {}
    for name, split, mb, cc, overlap, communicate in MODES:
        if name not in args.modes.split(","):
            continue
        models[name] = DominoTransformer(TransformerConfig(
            hidden_size=args.hidden, num_attention_heads=8, num_layers=args.layers,
            split=split, micro_batches=mb, column_chunks=cc, overlap=overlap,
            sequence_parallel=name.endswith(" sp")))
        models[name]._drop_communication_for_benchmark(not communicate)
        inputs[name] = mine if name.endswith(" sp") else x
    wanted = [n for n in MEGATRON_MODES if n in args.modes.split(",")]
    if wanted:
        models.update(megatron_blocks(args, wanted))
        inputs.update({n: mine if MEGATRON_MODES[n][1] else x for n in wanted})
    # Modes take turns step by step, so the machine's drift (large on a shared VM) hits all alike.
    samples = {name: [] for name in models}
    for step in range(args.steps + 3):
        for name, model in models.items():
            dist.barrier()
            began = time.perf_counter()
            model(inputs[name].requires_grad_()).sum().backward()
            if step >= 3:  # warm-up
                samples[name].append(time.perf_counter() - began)
    times = {}
    for name in models:
        # both ranks must agree; the slower rank's time is the step time
        t = torch.tensor([statistics.median(samples[name]), min(samples[name])], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        # Each step as the slower rank saw it, for comparisons step by step (see PAIRED).
        steps = torch.tensor(samples[name], dtype=torch.float64)
        dist.all_reduce(steps, op=dist.ReduceOp.MAX)
        times[name] = {"median_ms": t[0].item() * 1e3 / args.layers, "min_ms": t[1].item() * 1e3 / args.layers,
                       "steps_ms": (steps * 1e3 / args.layers).tolist()}
    if args.trace_dir:
        trace_steps(args, models, x)
    dist.destroy_process_group()
    if args.rank == 0:
        print(json.dumps(times))


def megatron_blocks(args, names: list[str]) -> dict:
    """Megatron-Core TransformerBlocks of the bench's shape over the world group, as callables
    of the hidden state: the local spec's (Megatron's own TP) and the Domino spec's."""
    import warnings

    import torch
    import torch.nn.functional as F
    warnings.filterwarnings("ignore")
    from megatron.core import parallel_state
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import (TransformerBlock,
                                                             TransformerBlockSubmodules)
    from megatron.core.transformer.transformer_config import TransformerConfig

    from torch_domino.megatron import SequenceParallelNorm, get_gpt_layer_domino_spec
    from torch_domino.megatron.cpu import use_cpu

    parallel_state.initialize_model_parallel(tensor_model_parallel_size=2)
    use_cpu()
    mask = torch.ones(args.seq, args.seq, dtype=torch.bool).triu(1).view(1, 1, args.seq, args.seq)
    blocks = {}
    for name in names:
        spec_kind, sp = MEGATRON_MODES[name]
        config = TransformerConfig(
            num_layers=args.layers, hidden_size=args.hidden, num_attention_heads=8,
            ffn_hidden_size=4 * args.hidden, activation_func=F.gelu, normalization="LayerNorm",
            hidden_dropout=0.0, attention_dropout=0.0, use_cpu_initialization=True,
            tensor_model_parallel_size=2, sequence_parallel=sp)
        if spec_kind == "domino":
            spec = get_gpt_layer_domino_spec(split="row", micro_batches=2, config=config)
        else:
            spec = get_gpt_layer_local_spec(normalization="LayerNorm")
            if sp:
                spec.submodules.input_layernorm = SequenceParallelNorm
                spec.submodules.pre_mlp_layernorm = SequenceParallelNorm
                spec = TransformerBlockSubmodules(layer_specs=[spec] * args.layers,
                                                  layer_norm=SequenceParallelNorm)
        torch.manual_seed(7)
        block = TransformerBlock(config=config, spec=spec)
        blocks[name] = lambda hidden, block=block: block(hidden, attention_mask=mask)
    return blocks


def trace_steps(args, models: dict, x) -> None:
    """One profiled step per timeline mode, written as a Chrome trace per mode and rank."""
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, record_function

    for name in TIMELINE_MODES:
        if name not in models:
            continue
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            dist.barrier()  # both ranks start the step together
            with record_function(STEP_EVENT):
                models[name](x.requires_grad_()).sum().backward()
        prof.export_chrome_trace(str(Path(args.trace_dir) / f"{name}.rank{args.rank}.json"))


def merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def subtracted(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of merged intervals a outside merged intervals b."""
    out = []
    for start, end in a:
        for cut_start, cut_end in b:
            if cut_end <= start or cut_start >= end:
                continue
            if cut_start > start:
                out.append((start, cut_start))
            start = max(start, cut_end)
            if start >= end:
                break
        if start < end:
            out.append((start, end))
    return out


def overlapped(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Total length of the intersection of two merged interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def step_threads(trace_file: Path) -> tuple[float, dict]:
    """The step's length (ms) and, per thread, its merged compute and communication spans (ms
    from the step's start). Communication: the backend's <backend>:<op> events, from the moment
    the lane starts the op (its peer may still be on its way) to its end; compute: the step's
    ops, collective calls (c10d::*) aside, less the time the thread waits for a reduction
    (domino:wait) or runs one."""
    events = [e for e in json.loads(trace_file.read_text())["traceEvents"] if e.get("ph") == "X"]
    step = next(e for e in events if e["name"] == STEP_EVENT)
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    spans: dict = defaultdict(lambda: {"compute": [], "communication": [], "wait": []})
    by_thread: dict = defaultdict(list)
    for e in events:
        start, end = e["ts"], e["ts"] + e.get("dur", 0)
        if end > t0 and start < t1 and e is not step:
            by_thread[e["tid"]].append((start, end, e))
    for tid, items in by_thread.items():
        items.sort(key=lambda item: (item[0], -item[1]))
        for start, end, e in items:
            interval = ((max(start, t0) - t0) / 1e3, (min(end, t1) - t0) / 1e3)
            if e["name"] == "domino:wait":
                spans[tid]["wait"].append(interval)
            elif e["name"].startswith(("domino:", "gloo:")):
                spans[tid]["communication"].append(interval)
            elif e.get("cat") == "cpu_op" and not e["name"].startswith("c10d::"):
                spans[tid]["compute"].append(interval)
    for kinds in spans.values():
        # An op around others (an autograd node, a layer's forward) also spans the waits for its
        # reductions, and a wait may run the reduction itself: neither is compute.
        kinds["compute"] = subtracted(merged(kinds["compute"]),
                                      merged(kinds["wait"] + kinds["communication"]))
    threads = {tid: {kind: merged(v) for kind, v in kinds.items()} for tid, kinds in spans.items()}
    # The step's own thread first, then the lanes.
    order = sorted(threads, key=lambda tid: (tid != step["tid"], str(tid)))
    return step["dur"] / 1e3, {tid: threads[tid] for tid in order}


def draw_timeline(trace_dir: Path, out_png: Path, title: str) -> list[str]:
    """Naive beside Domino: one panel per mode, a row per rank and thread. Returns a line per mode
    with the share of its communication that ran while its rank computed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in TIMELINE_MODES if (trace_dir / f"{m}.rank0.json").exists()]
    fig, axes = plt.subplots(len(modes), 1, figsize=(10, 1.9 * len(modes) + 0.6), squeeze=False)
    summary = []
    for ax, mode in zip(axes[:, 0], modes):
        labels, row = [], 0
        comm_total = hidden_total = 0.0
        lengths = []
        for rank in (0, 1):
            length, threads = step_threads(trace_dir / f"{mode}.rank{rank}.json")
            lengths.append(length)
            compute_all = merged([s for t in threads.values() for s in t["compute"]])
            comm_all = merged([s for t in threads.values() for s in t["communication"]])
            comm_total += sum(b - a for a, b in comm_all)
            hidden_total += overlapped(comm_all, compute_all)
            for index, spans in enumerate(threads.values()):
                if not (spans["compute"] or spans["communication"] or spans["wait"]):
                    continue
                ax.broken_barh([(a, b - a) for a, b in spans["compute"]], (row - 0.4, 0.8),
                               color="#4a7fb5")
                ax.broken_barh([(a, b - a) for a, b in merged(spans["wait"])], (row - 0.1, 0.2),
                               color="#999999")
                ax.broken_barh([(a, b - a) for a, b in spans["communication"]], (row - 0.25, 0.5),
                               color="#e8833a")
                labels.append(f"rank {rank} " + ("step thread" if index == 0 else f"lane {index}"))
                row += 1
        share = hidden_total / comm_total if comm_total else 0.0
        line = (f"{mode}: step {max(lengths):.1f} ms, communication {comm_total / 2:.1f} ms per "
                f"rank, {share:.0%} of it while the rank computes")
        summary.append(line)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(line, fontsize=8, loc="left")
        ax.set_xlim(0, max(lengths) * 1.01)
    axes[-1, 0].set_xlabel("ms from the start of the step (blue: compute, orange: communication, grey: waiting for it)")
    fig.suptitle("\n".join(textwrap.wrap(title, 150)), fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--master", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=29700)
    parser.add_argument("--modes", default=",".join(m[0] for m in MODES))
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--mbit", type=float, default=0, help="link rate; 0 calibrates")
    parser.add_argument("--gloo-threads", type=int, default=1)
    parser.add_argument("--backend", choices=["domino", "gloo"], default="domino")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "overlap"))
    parser.add_argument("--trace-dir", default="", help=argparse.SUPPRESS)  # workers only
    parser.add_argument("--no-timeline", action="store_true", help="skip the profiled steps")
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    with ShapedLink() as link:
        shaped = link.up
        where = "two network namespaces over a tc-shaped veth link" if shaped else "one host (loopback)"
        rate = args.mbit or 1000.0
        for attempt in range(4):
            if link.up:
                link.shape(rate)
            probe = launch(link, args, ["naive", "no-communication bound"])
            naive, bound = probe["naive"]["median_ms"], probe["no-communication bound"]["median_ms"]
            fraction = (naive - bound) / naive
            print(f"# {where}: {rate:.0f} Mbit/s -> naive {naive:.1f} ms/layer, bound {bound:.1f} ms/layer,"
                  f" communication {fraction:.0%} of naive", flush=True)
            if not link.up or args.mbit or 0.30 <= fraction <= 0.50:
                break
            # Communication time scales as 1/rate: aim at 40% of the step.
            wanted = 0.40 / 0.60 * bound
            rate *= max(naive - bound, 1e-3) / wanted
        trace_dir = tempfile.mkdtemp(prefix="domino-overlap-traces-")
        os.chmod(trace_dir, 0o777)  # the workers may run in other namespaces, same filesystem
        results = launch(link, args, [m[0] for m in MODES] + list(MEGATRON_MODES),
                         "" if args.no_timeline else trace_dir)

    naive = results["naive"]["median_ms"]
    bound = results["no-communication bound"]["median_ms"]
    rows = []
    for name in [m[0] for m in MODES] + list(MEGATRON_MODES):
        if name not in results:
            continue
        t = results[name]["median_ms"]
        communicating = name.startswith("domino") and not name.endswith("no-comm")
        hidden = (naive - t) / (naive - bound) if communicating and naive > bound else None
        rows.append({
            "mode": name, "median_ms_per_layer": round(t, 2), "min_ms_per_layer": round(results[name]["min_ms"], 2),
            "vs_bound": round(t / bound, 3), "speedup_vs_naive": round(naive / t, 3),
            "communication_hidden": None if hidden is None else round(hidden, 3),
        })
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    header = (f"TP=2, {args.layers} layers, h={args.hidden}, s={args.seq}, b={args.batch}, fp32, {args.backend}; "
              f"{where}" + (f" at {rate:.0f} Mbit/s" if shaped else "") +
              f"; naive spends {(naive - bound) / naive:.0%} of its step communicating")
    lines = [f"# Domino overlap: per-layer step time (forward + backward)", "", header, "",
             "| mode | median ms/layer | min ms/layer | x bound | speed-up vs naive | communication hidden |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        hidden = "" if r["communication_hidden"] is None else f"{r['communication_hidden']:.0%}"
        lines.append(f"| {r['mode']} | {r['median_ms_per_layer']} | {r['min_ms_per_layer']} | {r['vs_bound']} |"
                     f" {r['speedup_vs_naive']} | {hidden} |")
    lines += ["", "Step by step (each step's time against the other mode's step next to it; speed ratio > 1: "
              "the first is faster):", ""]
    for mode, baseline in PAIRED:
        if mode not in results or baseline not in results:
            continue
        ratios = [b / m for m, b in zip(results[mode]["steps_ms"], results[baseline]["steps_ms"])]
        faster = sum(r > 1 for r in ratios)
        lines.append(f"- {mode} vs {baseline}: median speed ratio {statistics.median(ratios):.3f}, "
                     f"faster in {faster} of {len(ratios)} steps")
    megatron = [(d, l) for d, l in PAIRED if d.startswith("megatron") and d in results]
    if megatron:
        lines += ["", "Megatron-Core GPT layers (TransformerBlock), Domino spec (row split, 2 micro-batches) "
                  "over the local spec, median step times:", ""]
        for domino, local in megatron:
            lines.append(f"- {domino} vs {local}: {results[local]['median_ms'] / results[domino]['median_ms']:.3f}x")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.barh([r["mode"] for r in rows], [r["median_ms_per_layer"] for r in rows], color="#4a7")
        ax.set_xlabel("ms per layer (forward + backward), median")
        ax.set_title(header, fontsize=7)
        fig.tight_layout()
        fig.savefig(out.with_suffix(".png"), dpi=120)
    except ImportError:
        print("# matplotlib missing: no plot")
        return
    if not args.no_timeline:
        timeline = out.parent / (out.name + "_timeline.png")
        for line in draw_timeline(Path(trace_dir), timeline, "one profiled step per mode; " + header):
            print("# " + line)
        print(f"# timeline: {timeline}")
    shutil.rmtree(trace_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
