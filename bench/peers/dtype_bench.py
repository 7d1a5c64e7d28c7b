"""All-reduce on one host in float32, bfloat16 and float16: domino against the peers a CPU user
would pick instead, in the same processes, alternating call batches.

    python bench/peers/dtype_bench.py                      # world 2 and 4, 8 B .. 64 MiB
    python bench/peers/dtype_bench.py --worlds 2 --max-bytes 1M --backends domino deepspeed fake

Peers (bench only: `bash bench/peers/setup.sh` installs them outside the project's environment):

- deepspeed: DeepSpeed's CPU shared-memory op (`deepspeed.comm.inference_all_reduce`, the op
  DeepSpeed's and vLLM's CPU tensor parallelism call), built by DeepSpeed itself on first use.
  Its bfloat16 and float16 run only where the CPU has AVX-512BW; elsewhere it calls
  `torch.distributed.all_reduce`, which is domino here, so those dtypes are not timed (the
  table says so);
- fake: torch's no-op `fake` backend (`torch.testing._internal.distributed.fake_pg`), whose
  all-reduce returns at once: the cost of c10d's dispatch from Python alone, the floor any
  backend pays;
- oneccl: oneCCL 2022.2's C++ `ccl::allreduce` (Intel's CPU collectives, which torch-ccl
  wrapped), built by setup.sh into a small library of our own (oneccl_peer.cpp) that the ranks
  load with ctypes. Its calls skip c10d's dispatch, which the fake row prices. It runs with
  shared memory between local ranks and progress on the calling thread (CCL_ATL_SHM=1,
  CCL_WORKER_OFFLOAD=0, CCL_YIELD=sched_yield): its defaults, one worker thread per rank that
  sleeps between ops, took 5 ms per call on 2 cores;
- gloo: torch's Gloo, over a group of its own; here it shares the cores with domino's idle
  progress threads, and `python -m torch_domino.bench` times it in processes of its own;
- mpi: not in this harness. MPI has no bfloat16 or float16 datatype (MPI 4.1 none, Open MPI 4.1
  none); its float32 bench is `python -m torch_domino.bench`.

Every rank joins one domino process group; DeepSpeed's op, oneCCL's communicator and a Gloo
group live beside it. For each size, each backend and dtype is timed in --repeats batches, their
order rotating every batch, so the machine's drift touches all alike; a batch's time is the
slowest rank's, and the table keeps each backend's fastest batch. Sizes are bytes of the tensor. Writes dtypes.csv,
dtypes.md and dtypes.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch_domino.bench import human, parse_bytes, sizes

ROOT = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("DOMINO_BENCH_PEERS", "/opt/torch-domino-peers"))
MARK = "@@dtype@@"
DTYPES = ("float32", "bfloat16", "float16")


def worker(args: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401  registers "domino"

    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("domino", init_method=args.init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    gloo = dist.new_group(backend="gloo")
    # Every backend is called the same way, with its group named, as the fake one must be.
    world_group = dist.group.WORLD
    skipped = set()  # (dtype, backend) pairs that would time another backend under its name
    calls = {"domino": lambda x: dist.all_reduce(x, group=world_group),
             "gloo": lambda x: dist.all_reduce(x, group=gloo)}
    if "fake" in args.backends:
        from torch.testing._internal.distributed import fake_pg  # noqa: F401  registers "fake"
        fake = dist.new_group(backend="fake")
        calls["fake"] = lambda x: dist.all_reduce(x, group=fake)
    if "deepspeed" in args.backends:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
        os.environ["LOCAL_SIZE"] = str(world)  # DeepSpeed's op reads it (and faults without it)
        import deepspeed
        import deepspeed.comm as dscomm
        deepspeed.init_distributed(dist_backend="gloo", verbose=False)
        # Without its op DeepSpeed falls back to torch.distributed.all_reduce, i.e. domino here.
        if not hasattr(torch.ops.deepspeed, "inference_all_reduce_"):
            raise SystemExit("DeepSpeed's shared-memory op did not build: nothing to compare")
        calls["deepspeed"] = lambda x: dscomm.inference_all_reduce(x)
        for dtype_name in args.dtypes:
            if not deepspeed_runs_its_own_op(dscomm, getattr(torch, dtype_name)):
                skipped.add((dtype_name, "deepspeed"))
                if rank == 0:
                    print(MARK + json.dumps({"backend": "deepspeed", "dtype": dtype_name,
                                             "world": world, "fallback": True}), flush=True)
    if "oneccl" in args.backends:
        calls["oneccl"] = OneCclAllReduce(rank, world, gloo)
    slowest = torch.zeros(1, dtype=torch.float64)

    def max_over_ranks(seconds: float) -> float:
        slowest[0] = seconds
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=gloo)
        return float(slowest[0])

    backends = [b for b in args.backends if b in calls]
    # Every dtype of a size runs in the same rotation, so that 16-bit and float32 at the same
    # bytes are compared under the same drift as the backends are.
    for nbytes in sizes(args.min_bytes, args.max_bytes):
        tensors = {}
        for dtype_name in args.dtypes:
            dtype = getattr(torch, dtype_name)
            element = torch.tensor([], dtype=dtype).element_size()
            if nbytes >= element:
                # Zeros: repeated in-place sums stay finite in every dtype.
                tensors[dtype_name] = torch.zeros(nbytes // element, dtype=dtype)
        entries = [(d, b) for d in tensors for b in backends if (d, b) not in skipped]
        if not entries:
            continue
        iters = {}
        for d, b in entries:
            x = tensors[d]
            # From 64 KiB a one-host domino group tries two in-host all-reduces on its first 48
            # calls of each size class (docs/routing.md): timed is what it runs after.
            warm = 50 if b == "domino" and nbytes >= (64 << 10) else 5 if nbytes < (1 << 20) else 1
            for _ in range(warm):
                calls[b](x)
            start = time.perf_counter()
            calls[b](x)
            one = max_over_ranks(time.perf_counter() - start)
            iters[d, b] = int(min(5000, max(1, args.seconds_per_size / args.repeats /
                                                max(one, 1e-7))))
        best = {e: float("inf") for e in entries}
        for rep in range(args.repeats):
            for d, b in entries[rep % len(entries):] + entries[:rep % len(entries)]:
                x = tensors[d]
                dist.barrier(group=gloo)
                start = time.perf_counter()
                for _ in range(iters[d, b]):
                    calls[b](x)
                best[d, b] = min(best[d, b],
                                 max_over_ranks((time.perf_counter() - start) / iters[d, b]))
        if rank == 0:
            for d, b in entries:
                print(MARK + json.dumps({"backend": b, "dtype": d, "world": world,
                                         "bytes": nbytes, "time_us": best[d, b] * 1e6}),
                      flush=True)
    if "oneccl" in calls:
        calls["oneccl"].close()
    dist.destroy_process_group()


def deepspeed_runs_its_own_op(dscomm, dtype) -> bool:
    """Whether DeepSpeed's `inference_all_reduce` runs its shared-memory op for `dtype` here.

    Where it cannot (DeepSpeed 0.19.8 runs 16-bit only with AVX-512BW), it calls
    `torch.distributed.all_reduce` on the default group, which is domino's: timing that as
    DeepSpeed would compare domino with itself. One call per rank, watched, tells; every rank
    takes the same branch, since the rule is the CPU's.
    """
    import torch
    import torch.distributed as dist

    fell_back = []
    real = dist.all_reduce

    def watched(*args, **kwargs):
        fell_back.append(True)
        return real(*args, **kwargs)

    dist.all_reduce = watched
    try:
        dscomm.inference_all_reduce(torch.zeros(8, dtype=dtype))
    finally:
        dist.all_reduce = real
    return not fell_back


class OneCclAllReduce:
    """oneCCL's in-place sum through bench/peers/oneccl_peer.cpp, joined over `group`."""

    CODES = {"float32": 0, "bfloat16": 1, "float16": 2}

    def __init__(self, rank: int, world: int, group) -> None:
        import ctypes

        import torch.distributed as dist

        for name, value in (("CCL_ATL_SHM", "1"), ("CCL_WORKER_OFFLOAD", "0"),
                            ("CCL_YIELD", "sched_yield"), ("CCL_LOG_LEVEL", "error"),
                            ("CCL_LOCAL_RANK", str(rank)), ("CCL_LOCAL_SIZE", str(world))):
            os.environ.setdefault(name, value)
        lib = ctypes.CDLL(str(PEERS / "oneccl" / "liboneccl_peer.so"))
        lib.oneccl_peer_all_reduce.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        lib.oneccl_peer_connect.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                            ctypes.c_int]
        address = [None]
        if rank == 0:
            buffer = ctypes.create_string_buffer(1024)
            length = lib.oneccl_peer_main_address(buffer, len(buffer))
            if length <= 0:
                raise SystemExit("oneCCL's key-value store did not start")
            address = [buffer.raw[:length]]
        dist.broadcast_object_list(address, src=0, group=group)
        if lib.oneccl_peer_connect(rank, world, address[0], len(address[0])):
            raise SystemExit(f"rank {rank}: oneCCL's communicator did not start")
        self.lib = lib

    def __call__(self, x) -> None:
        code = self.CODES[str(x.dtype).removeprefix("torch.")]
        if self.lib.oneccl_peer_all_reduce(x.data_ptr(), x.numel(), code):
            raise RuntimeError(f"oneCCL all_reduce of {x.numel()} {x.dtype} failed")

    def close(self) -> None:
        self.lib.oneccl_peer_close()


def run_world(world: int, args: argparse.Namespace) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="domino-dtype-bench-") as tmp:
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
            if "deepspeed" in args.backends:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(PEERS)) if p)
            cmd = [sys.executable, __file__, "--worker", "--init", f"file://{tmp}/store",
                   "--backends", *args.backends, "--dtypes", *args.dtypes,
                   "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes),
                   "--seconds-per-size", str(args.seconds_per_size), "--repeats", str(args.repeats)]
            # Only rank 0 reports; the others' output would fill a pipe nobody reads.
            quiet = subprocess.DEVNULL if rank else None
            procs.append(subprocess.Popen(cmd, env=env, text=True,
                                          stdout=quiet or subprocess.PIPE,
                                          stderr=quiet or subprocess.STDOUT))
        for line in procs[0].stdout:
            if line.startswith(MARK):
                row = json.loads(line[len(MARK):])
                rows.append(row)
                if row.get("fallback"):
                    print(f"  [world {world}] {row['dtype']:>8} {row['backend']}: its op does not "
                          "run this dtype on this CPU; not timed", flush=True)
                    continue
                print(f"  [world {world}] {row['dtype']:>8} {human(row['bytes']):>7} "
                      f"{row['backend']:>9}: {row['time_us']:10.1f} us", flush=True)
            elif line.strip() and "arning" not in line:
                print(f"  [rank 0] {line.rstrip()}", flush=True)
        for p in procs:
            p.wait()
        if any(p.returncode for p in procs):
            print(f"  [world {world}] a rank failed (exit codes {[p.returncode for p in procs]})")
    return rows


def cpu_line() -> str:
    """The CPU, and whether it has AVX-512BW, which DeepSpeed's 16-bit op needs."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "CPU: unknown"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), "unknown")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    return (f"CPU: {model}, {os.cpu_count()} logical CPUs, "
            f"{'with' if 'avx512bw' in flags else 'without'} AVX-512BW.")


def markdown(rows: list[dict], fallbacks: list[dict], backends: list[str]) -> str:
    t = {(r["backend"], r["dtype"], r["world"], r["bytes"]): r["time_us"] for r in rows}
    peers = [b for b in backends if b != "domino"]
    out = [cpu_line()]
    for backend in sorted({r["backend"] for r in fallbacks}):
        mine = [r for r in fallbacks if r["backend"] == backend]
        dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in mine)]
        worlds = sorted({r["world"] for r in mine})
        out.append(f"\n{backend}: its op does not run {' or '.join(dtypes)} on this CPU "
                   "(DeepSpeed 0.19.8 runs float32 with AVX2 and 16-bit only with AVX-512BW) and "
                   "calls torch.distributed.all_reduce, i.e. domino, instead; not timed "
                   f"(world {', '.join(map(str, worlds))}).")
    for world in sorted({r["world"] for r in rows}):
        for dtype in [d for d in DTYPES if any(r["dtype"] == d for r in rows)]:
            header = ["size"] + [f"{b} us" for b in backends] + [f"{p} / domino" for p in peers]
            if dtype != "float32":
                header.append("domino / domino float32, same bytes")
            out += [f"\n**all_reduce {dtype}, world {world}** (us per call, fastest batch)\n",
                    "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            for nbytes in sorted({r["bytes"] for r in rows if r["world"] == world and r["dtype"] == dtype}):
                mine = t.get(("domino", dtype, world, nbytes))
                cells = [human(nbytes)] + [f"{t[(b, dtype, world, nbytes)]:.1f}"
                                           if (b, dtype, world, nbytes) in t else "" for b in backends]
                for p in peers:
                    theirs = t.get((p, dtype, world, nbytes))
                    cells.append(f"{theirs / mine:.2f}x" if mine and theirs else "")
                if dtype != "float32":
                    fp32 = t.get(("domino", "float32", world, nbytes))
                    cells.append(f"{mine / fp32:.2f}x" if mine and fp32 else "")
                out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(rows: list[dict], backends: list[str], path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    worlds = sorted({r["world"] for r in rows})
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in rows)]
    fig, axes = plt.subplots(len(worlds), len(dtypes), figsize=(5 * len(dtypes), 4 * len(worlds)),
                             squeeze=False)
    for i, world in enumerate(worlds):
        for j, dtype in enumerate(dtypes):
            ax = axes[i][j]
            for b in backends:
                mine = sorted((r["bytes"], r["time_us"]) for r in rows
                              if (r["backend"], r["dtype"], r["world"]) == (b, dtype, world))
                if mine:
                    ax.plot([m[0] for m in mine], [m[1] for m in mine], marker="o", label=b)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{dtype}, world {world}")
            ax.set_xlabel("bytes")
            ax.set_ylabel("us per all_reduce")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--backends", nargs="+",
                        default=["domino", "deepspeed", "oneccl", "gloo", "fake"],
                        choices=["domino", "deepspeed", "oneccl", "gloo", "fake"],
                        help="gloo here runs beside domino's progress threads, which share the "
                             "cores: python -m torch_domino.bench times it alone")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    parser.add_argument("--min-bytes", type=parse_bytes, default=8)
    parser.add_argument("--max-bytes", type=parse_bytes, default=64 << 20)
    parser.add_argument("--seconds-per-size", type=float, default=0.1,
                        help="time per backend, size and dtype, over all batches")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--stem", default="dtypes")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--init", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    for peer, path in (("deepspeed", PEERS / "deepspeed"),
                       ("oneccl", PEERS / "oneccl" / "liboneccl_peer.so")):
        if peer in args.backends and not path.exists():
            parser.error(f"{peer} is not installed in {PEERS}: run `bash bench/peers/setup.sh` "
                         f"(or leave {peer} out of --backends)")
    started = time.time()
    rows = []
    for world in args.worlds:
        print(f"== world {world}", flush=True)
        rows += run_world(world, args)
    # A backend that would have timed another under its name reports a row of its own instead.
    fallbacks = [r for r in rows if r.get("fallback")]
    rows = [r for r in rows if not r.get("fallback")]
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / f"{args.stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["backend", "dtype", "world", "bytes", "time_us"])
        w.writeheader()
        w.writerows({**r, "time_us": round(r["time_us"], 2)} for r in rows)
    table = markdown(rows, fallbacks, args.backends)
    (args.out / f"{args.stem}.md").write_text(table)
    plot(rows, args.backends, args.out / f"{args.stem}.png")
    print(table)
    print(f"wrote {args.out / args.stem}.csv, .md and .png in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
