"""Collective benchmarks in nccl-tests conventions, domino against Gloo (and MPI) in one run.

    python -m torch_domino.bench                      # world 2 and 4, 8 B .. 64 MiB
    python -m torch_domino.bench --worlds 2 --ops all_reduce --max-bytes 1M

For each backend and world size it starts real rank processes, times back-to-back collectives
(float32, SUM) at every size, and prints a progress line per size. Sizes follow nccl-tests: for
all_gather the size is the gathered output, for reduce_scatter the scattered input.
algbw = bytes / time; busbw = algbw * 2(p-1)/p for all_reduce and (p-1)/p for the others. Each
size is timed in `--repeats` batches; the table reports the minimum and the median batch, where
a batch's time is the slowest rank's. Results go to CSV, Markdown and a PNG plot in --out.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OPS = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor")
MARK = "@@bench@@"


def parse_bytes(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def human(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def bus_factor(op: str, world: int) -> float:
    if world == 1:
        return 1.0
    return 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world


def sizes(min_bytes: int, max_bytes: int):
    n = min_bytes
    while n <= max_bytes:
        yield n
        n *= 2


def _device(args: argparse.Namespace, rank: int):
    """This rank's device for the tensors, and what makes the host wait for it: CUDA ops return
    once enqueued, so a timer must stop only when the device is done. Ranks share GPUs round
    robin (the domino backend then stages through host memory, and so does Gloo)."""
    import torch

    if args.device == "cpu":
        return torch.device("cpu"), lambda: None
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device, torch.cuda.synchronize


# ----------------------------------------------------------------------------------------------
# One rank of one backend: times every op and size, rank 0 prints a JSON line per result.
# ----------------------------------------------------------------------------------------------
def worker(args: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2.14 renames *_into_tensor
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401  registers "domino"

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device, sync = _device(args, rank)
    dist.init_process_group(args.backend, init_method=args.init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    slowest = torch.zeros(1, dtype=torch.float64)

    def max_over_ranks(seconds: float) -> float:
        slowest[0] = seconds
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return float(slowest[0])

    for op in args.ops:
        for nbytes in sizes(args.min_bytes, args.max_bytes):
            count = nbytes // 4
            if op == "all_reduce":
                inp = torch.ones(max(count, 1), device=device)
                call = lambda: dist.all_reduce(inp)  # noqa: E731
            else:
                if count < world:
                    continue
                per_rank = count // world
                big = torch.ones(per_rank * world, device=device)
                small = torch.ones(per_rank, device=device)
                if op == "all_gather_into_tensor":
                    call = lambda: dist.all_gather_into_tensor(big, small)  # noqa: E731
                else:
                    call = lambda: dist.reduce_scatter_tensor(small, big)  # noqa: E731
            # The first sizes also warm the process. From 64 KiB a one-host domino group tries two
            # in-host all-reduces on its first 48 calls of each size class (docs/routing.md):
            # timed is what it runs after.
            trial = args.backend == "domino" and nbytes >= (64 << 10)
            warm = 50 if trial else 20 if nbytes < (1 << 20) else 2
            for _ in range(warm):
                call()
            sync()
            start = time.perf_counter()
            call()
            sync()
            one = max_over_ranks(time.perf_counter() - start)
            iters = int(min(10000, max(1, args.seconds_per_size / args.repeats / max(one, 1e-7))))
            samples = []
            for _ in range(args.repeats):
                dist.barrier()
                start = time.perf_counter()
                for _ in range(iters):
                    call()
                sync()
                samples.append(max_over_ranks((time.perf_counter() - start) / iters))
            if rank == 0:
                print(MARK + json.dumps({"backend": args.backend, "device": args.device,
                                         "op": op, "world": world,
                                         "bytes": nbytes, "iters": iters,
                                         "time_us_min": min(samples) * 1e6,
                                         "time_us_median": statistics.median(samples) * 1e6}),
                      flush=True)
    dist.destroy_process_group()


def priority_worker(args: argparse.Namespace) -> None:
    """4 KiB all-reduce latency alone and behind --load-bytes all-reduces, with and without
    lanes."""
    import torch
    import torch.distributed as dist

    import torch_domino

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device, sync = _device(args, rank)
    dist.init_process_group(args.backend, init_method=args.init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    lanes = args.backend == "domino" and args.lanes
    small = torch.ones(1024, device=device)
    big = torch.ones(args.load_bytes // 4, device=device)

    def lane(level):
        return torch_domino.priority(level) if lanes else contextlib.nullcontext()

    for level in ("low", "high"):
        with lane(level):
            dist.all_reduce(torch.ones(1, device=device))
    sync()
    results = {}
    for mode in ("alone", "loaded"):
        samples = []
        for i in range(args.samples if mode == "alone" else args.loaded_samples):
            background = None
            if mode == "loaded":
                with lane("low"):
                    background = dist.all_reduce(big, async_op=True)
            dist.barrier() if mode == "alone" and i % 50 == 0 else None
            start = time.perf_counter()
            with lane("high"):
                dist.all_reduce(small)
            sync() if args.device == "cpu" else torch.cuda.current_stream().synchronize()
            samples.append((time.perf_counter() - start) * 1e6)
            if background is not None:
                background.wait()
                sync()
        samples.sort()
        results[mode] = {"p50_us": samples[len(samples) // 2],
                         "p99_us": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
                         "samples": len(samples)}
    if rank == 0:
        print(MARK + json.dumps(results), flush=True)
    dist.destroy_process_group()


def run_priority_suite(args: argparse.Namespace) -> list[dict]:
    rows = []
    configs = [("domino", True, "domino, high lane over low lane"),
               ("domino", False, "domino, single lane"),
               ("gloo", False, "gloo")]
    for backend, lanes, label in configs:
        with tempfile.TemporaryDirectory(prefix="domino-bench-") as tmp:
            procs = []
            for rank in range(2):
                env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", OMP_NUM_THREADS="1")
                cmd = [sys.executable, "-m", "torch_domino.bench", "--worker-priority", "--backend", backend,
                       "--init", f"file://{tmp}/store", "--samples", str(args.samples),
                       "--loaded-samples", str(args.loaded_samples), "--device", args.device,
                       "--load-bytes", str(args.load_bytes)] + (["--lanes"] if lanes else [])
                procs.append(subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL))
            for line in procs[0].stdout:
                if line.startswith(MARK):
                    result = json.loads(line[len(MARK):])
                    for mode, stats in result.items():
                        row = {"config": label, "device": args.device, "mode": mode, **stats}
                        rows.append(row)
                        print(f"  [{label:<32}] {args.device} 4 KiB all_reduce {mode:<6}: p50 {stats['p50_us']:8.1f} us"
                              f"  p99 {stats['p99_us']:8.1f} us  ({stats['samples']} samples)", flush=True)
            for p in procs:
                p.wait()
    return rows


def write_priority_outputs(rows: list[dict], out: Path, stem: str = "priority",
                           load: str = "64 MiB") -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["config", "device", "mode", "p50_us", "p99_us", "samples"])
        w.writeheader()
        for row in rows:
            w.writerow({k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()})
    lines = [f"| configuration | alone p50 us | alone p99 us | under {load} load p50 us | under load p99 us | p99 loaded / p50 alone |",
             "|---|---|---|---|---|---|"]
    for config in dict.fromkeys(r["config"] for r in rows):
        alone = next(r for r in rows if r["config"] == config and r["mode"] == "alone")
        loaded = next(r for r in rows if r["config"] == config and r["mode"] == "loaded")
        lines.append(f"| {config} | {alone['p50_us']:.1f} | {alone['p99_us']:.1f} | {loaded['p50_us']:.1f} | "
                     f"{loaded['p99_us']:.1f} | {loaded['p99_us'] / alone['p50_us']:.1f}x |")
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")


# ----------------------------------------------------------------------------------------------
# The driver: launches workers per backend and world, MPI where present, writes the results.
# ----------------------------------------------------------------------------------------------
def with_bandwidth(row: dict) -> dict:
    seconds = row["time_us_min"] / 1e6
    algbw = row["bytes"] / seconds / 1e9 if seconds > 0 else 0.0
    row["algbw_GBps"] = algbw
    row["busbw_GBps"] = algbw * bus_factor(row["op"], row["world"])
    return row


def progress(row: dict) -> None:
    print(f"  [{row['backend']:>6} world {row['world']}] {row['op']:<24} {human(row['bytes']):>9}: "
          f"{row['time_us_min']:>10.1f} us  algbw {row['algbw_GBps']:6.2f} GB/s  "
          f"busbw {row['busbw_GBps']:6.2f} GB/s", flush=True)


def run_torch(backend: str, world: int, args: argparse.Namespace) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="domino-bench-") as tmp:
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
            cmd = [sys.executable, "-m", "torch_domino.bench", "--worker", "--backend", backend,
                   "--init", f"file://{tmp}/store", "--ops", *args.ops,
                   "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes),
                   "--seconds-per-size", str(args.seconds_per_size), "--repeats", str(args.repeats),
                   "--device", args.device]
            procs.append(subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT if rank == 0 else subprocess.DEVNULL))
        for line in procs[0].stdout:
            if line.startswith(MARK):
                row = with_bandwidth(json.loads(line[len(MARK):]))
                rows.append(row)
                progress(row)
            elif "Warning" not in line and line.strip():
                print(f"  [{backend} rank 0] {line.rstrip()}")
        for p in procs:
            p.wait()
        if any(p.returncode for p in procs):
            print(f"  [{backend} world {world}] a rank failed (exit codes "
                  f"{[p.returncode for p in procs]})", flush=True)
    return rows


def mpi_source() -> Path | None:
    for candidate in (Path(__file__).resolve().parent / "bench_data" / "collectives_bench.c",
                      Path(__file__).resolve().parents[2] / "bench" / "mpi" / "collectives_bench.c"):
        if candidate.exists():
            return candidate
    return None


def run_mpi(world: int, args: argparse.Namespace) -> list[dict]:
    source = mpi_source()
    if not (shutil.which("mpicc") and shutil.which("mpirun") and source):
        return []
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "torch-domino"
    cache.mkdir(parents=True, exist_ok=True)
    binary = cache / "mpi_collectives_bench"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["mpicc", "-O2", "-o", str(binary), str(source)], check=True)
    cmd = ["mpirun", "--oversubscribe", "-np", str(world)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += [str(binary), str(args.min_bytes), str(args.max_bytes), str(args.seconds_per_size),
            str(args.repeats), ",".join(args.ops)]
    rows = []
    with subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        for line in proc.stdout:
            parts = line.strip().split(",")
            if len(parts) != 7 or parts[0] != "mpi":
                continue
            row = with_bandwidth({"backend": "mpi", "op": parts[1], "world": int(parts[2]),
                                  "bytes": int(parts[3]), "iters": int(parts[4]),
                                  "time_us_min": float(parts[5]), "time_us_median": float(parts[6])})
            rows.append(row)
            progress(row)
    return rows


FIELDS = ["backend", "op", "world", "bytes", "iters", "time_us_min", "time_us_median",
          "algbw_GBps", "busbw_GBps"]


def write_outputs(rows: list[dict], out: Path, backends: list[str], stem: str = "collectives") -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    (out / f"{stem}.md").write_text(markdown_table(rows, backends))
    plot(rows, out / f"{stem}.png", backends)


def markdown_table(rows: list[dict], backends: list[str]) -> str:
    index = {(r["backend"], r["op"], r["world"], r["bytes"]): r for r in rows}
    lines = []
    for op in dict.fromkeys(r["op"] for r in rows):
        for world in sorted({r["world"] for r in rows if r["op"] == op}):
            present = [b for b in backends if any(k[0] == b and k[1] == op and k[2] == world for k in index)]
            lines.append(f"\n**{op}, world {world}** (time in us, min of batches; busbw in GB/s)\n")
            header = "| size | " + " | ".join(f"{b} us | {b} busbw" for b in present)
            if "domino" in present and "gloo" in present:
                header += " | domino vs gloo"
            if "domino" in present and "mpi" in present:
                header += " | domino vs mpi"
            lines.append(header + " |")
            lines.append("|" + "---|" * header.count("|"))
            for nbytes in sorted({r["bytes"] for r in rows if r["op"] == op and r["world"] == world}):
                cells = [human(nbytes)]
                for b in present:
                    r = index.get((b, op, world, nbytes))
                    cells += [f"{r['time_us_min']:.1f}", f"{r['busbw_GBps']:.2f}"] if r else ["", ""]
                d = index.get(("domino", op, world, nbytes))
                for peer in ("gloo", "mpi"):
                    if "domino" in present and peer in present:
                        p = index.get((peer, op, world, nbytes))
                        cells.append(f"{p['time_us_min'] / d['time_us_min']:.1f}x" if d and p else "")
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path, backends: list[str]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", flush=True)
        return
    panels = sorted({(r["op"], r["world"]) for r in rows}, key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 9, k[1]))
    if not panels:
        return
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7), squeeze=False)
    for col, (op, world) in enumerate(panels):
        for backend in backends:
            pts = sorted((r["bytes"], r["time_us_min"], r["busbw_GBps"]) for r in rows
                         if r["backend"] == backend and r["op"] == op and r["world"] == world)
            if not pts:
                continue
            x = [p[0] for p in pts]
            axes[0][col].loglog(x, [p[1] for p in pts], marker=".", label=backend)
            axes[1][col].semilogx(x, [p[2] for p in pts], marker=".", label=backend)
        axes[0][col].set_title(f"{op}, world {world}", fontsize=9)
        axes[0][col].set_ylabel("time (us)")
        axes[1][col].set_ylabel("bus bandwidth (GB/s)")
        axes[1][col].set_xlabel("message size (bytes)")
        axes[0][col].legend(fontsize=8)
        for ax in (axes[0][col], axes[1][col]):
            ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("torch-domino collectives (float32 SUM; min of batches)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_domino.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--backends", nargs="+", default=["domino", "gloo", "mpi"],
                        help="mpi runs only where mpicc and mpirun exist")
    parser.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    parser.add_argument("--min-bytes", type=parse_bytes, default=8)
    parser.add_argument("--max-bytes", type=parse_bytes, default=64 << 20)
    parser.add_argument("--seconds-per-size", type=float, default=0.25,
                        help="time budget per size, all repeats together")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--suite", choices=["collectives", "priority"], default="collectives",
                        help="priority: 4 KiB all-reduce p50/p99 alone and behind 64 MiB ones "
                             "(domino lanes, domino single lane, gloo; world 2)")
    parser.add_argument("--samples", type=int, default=2000, help="priority suite: samples alone")
    parser.add_argument("--loaded-samples", type=int, default=200,
                        help="priority suite: samples under load (one 64 MiB all-reduce each)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: tensors on the GPUs, ranks sharing them round robin; results "
                             "go to *_cuda.csv/md/png")
    parser.add_argument("--load-bytes", type=parse_bytes, default=64 << 20,
                        help="priority suite: size of the low-priority all-reduces under load")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-priority", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--lanes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    parser.add_argument("--init", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if args.worker_priority:
        priority_worker(args)
        return 0
    suffix = "" if args.device == "cpu" else f"_{args.device}"
    if args.suite == "priority":
        rows = run_priority_suite(args)
        write_priority_outputs(rows, args.out, f"priority{suffix}", human(args.load_bytes))
        print((args.out / f"priority{suffix}.md").read_text())
        return 0
    rows: list[dict] = []
    started = time.time()
    for world in args.worlds:
        for backend in args.backends:
            if backend == "mpi" and args.device != "cpu":
                continue  # the MPI harness moves host memory only
            print(f"== {backend}, world {world}, {args.device}", flush=True)
            rows += run_mpi(world, args) if backend == "mpi" else run_torch(backend, world, args)
    if not rows:
        print("no results", file=sys.stderr)
        return 1
    write_outputs(rows, args.out, args.backends, f"collectives{suffix}")
    print(f"\nwrote {args.out / f'collectives{suffix}.csv'}, .md and .png "
          f"in {time.time() - started:.0f} s")
    print((args.out / f"collectives{suffix}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
