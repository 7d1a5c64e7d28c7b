"""Hierarchical vs flat all-reduce (and all-gather) across two hosts, on the wire.

Two network namespaces ("hosts") joined by a veth pair shaped with tc to 1 Gbit/s, two ranks in
each. For a 16 MiB all-reduce it times, in one run, the router's automatic plan, the forced
split-rail hierarchical plan (pipelined in chunks, and in one piece), a flat UCX ring with host-contiguous ranks (0,1 | 2,3) and with
interleaved ranks (0,2 | 1,3), and gloo; it counts the bytes that crossed the link (the veth's
own tx counters, so TCP/IP headers included). For messages of 4 KiB or less it compares the
router's automatic choice with every forced plan. Each host's local rank l is pinned to core l.
It also times a 16 MiB all-gather (gathered
size) by rail then inside the host against flat, in both rank orders, and 16 MiB broadcasts,
reduces and reduce-scatters under every plan the router has for them. UCX runs over TCP only (UCX_TLS=tcp,self), so
nothing slips between the namespaces through shared memory.

    sudo python bench/multihost/hier_bench.py      # writes bench/results/multihost.{csv,md,png}
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from shaped_link import ShapedLink  # noqa: E402

# name: (backend, DOMINO_ALGO, DOMINO_RAIL_CHUNK_BYTES). Every mode is its own process group in
# the same processes, and the modes take turns repeat by repeat, so the machine's drift hits all
# alike.
MODES = {
    "auto (router)": ("domino", "auto", ""),
    "hierarchical": ("domino", "hierarchical", ""),
    "hierarchical, one piece": ("domino", "hierarchical", "0"),
    "leader": ("domino", "leader", ""),
    "flat": ("domino", "flat", ""),
    "flat ring": ("domino", "flat,ring", ""),
    "gloo": ("gloo", "", ""),
}
LARGE = ["auto (router)", "hierarchical", "hierarchical, one piece", "leader", "flat ring", "gloo"]
SMALL = ["auto (router)", "hierarchical", "leader", "flat"]
GATHER = ["auto (router)", "hierarchical", "hierarchical, one piece", "flat", "gloo"]
# Broadcast, reduce and reduce-scatter: every two-level plan the router has for them, and flat.
OTHER_OPS = ("broadcast", "reduce", "reduce_scatter")
OTHER = ["auto (router)", "hierarchical", "leader", "flat"]
CONTIGUOUS, INTERLEAVED = (0, 0, 1, 1), (0, 1, 0, 1)


def launch(link: ShapedLink, modes: list[str], hosts, sizes, iters: int, repeats: int,
           op: str = "all_reduce") -> dict:
    port = 29500 + int(time.time() * 1000) % 400
    procs = []
    for rank, host in enumerate(hosts):
        env = dict(os.environ, OMP_NUM_THREADS="1", UCX_TLS="tcp,self", DOMINO_LOG="info",
                   UCX_NET_DEVICES=link.device(host), GLOO_SOCKET_IFNAME=link.device(host))
        # Each host's local rank l runs on core l, as ranks on hosts of their own would each have
        # a core: left to the scheduler, which pairs of the four ranks share a core changes from
        # run to run, and with it which plan is fastest.
        pin = ["taskset", "-c", str(hosts[:rank].count(host) % os.cpu_count())] if shutil.which("taskset") else []
        cmd = [*pin, "ip", "netns", "exec", link.namespaces[host], sys.executable, __file__, "--worker",
               "--rank", str(rank), "--master", link.addresses[0], "--port", str(port),
               "--device", link.device(host), "--count-bytes", str(int(rank == hosts.index(host))),
               "--modes", ";".join(modes), "--sizes", ",".join(map(str, sizes)),
               "--iters", str(iters), "--repeats", str(repeats), "--op", op]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=1800) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise SystemExit(f"worker failed:\n{out[-2000:]}\n{err[-3000:]}")
    # What the router's small-message trial measured and adopted (logged by rank 0 at info).
    for line in outputs[0][1].splitlines():
        if "take plan" in line:
            print("#", line.strip(), flush=True)
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    merged = results[0]
    for key in merged:  # bytes on the link: one counting rank per host, each its host's sends
        merged[key]["busiest_bytes"] = max(r[key]["wire_bytes"] for r in results)
        merged[key]["wire_bytes"] = sum(r[key]["wire_bytes"] for r in results)
    return merged


def worker(args) -> None:
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"tcp://{args.master}:{args.port}",
                            rank=args.rank, world_size=4)
    groups = {}
    for mode in args.modes.split(";"):
        backend, algo, rail_chunk = MODES[mode]
        os.environ["DOMINO_ALGO"] = algo or "auto"  # read when the group is created
        os.environ.pop("DOMINO_RAIL_CHUNK_BYTES", None)
        if rail_chunk:
            os.environ["DOMINO_RAIL_CHUNK_BYTES"] = rail_chunk
        groups[mode] = dist.new_group(backend=backend)
    counter = Path(f"/sys/class/net/{args.device}/statistics/tx_bytes")
    samples = {}
    sizes = [int(s) for s in args.sizes.split(",")]
    tensors = {size: torch.ones(max(1, size // 4)) for size in sizes}
    # all_gather: `size` is the gathered output, reduce_scatter: the input, as nccl-tests count.
    blocks = {size: torch.ones(max(1, size // 4 // 4)) for size in sizes}

    def collective(size, group):
        if args.op == "all_gather":
            dist.all_gather_into_tensor(tensors[size], blocks[size], group=group)
        elif args.op == "reduce_scatter":
            dist.reduce_scatter_tensor(blocks[size], tensors[size], group=group)
        elif args.op == "broadcast":
            dist.broadcast(tensors[size], src=0, group=group)
        elif args.op == "reduce":
            dist.reduce(tensors[size], dst=0, group=group)
        else:
            dist.all_reduce(tensors[size], group=group)

    for mode, group in groups.items():
        for size in tensors:
            for _ in range(3):
                collective(size, group)
    # The modes' order turns every repeat: a mode's traffic can outlast its timing (Gloo's does,
    # on the shaped link), and a fixed order charged that tail to the same next mode each time.
    order = list(groups.items())
    for repeat in range(args.repeats):
        for size in tensors:
            turn = repeat % len(order)
            for mode, group in order[turn:] + order[:turn]:
                dist.barrier()
                before = int(counter.read_text()) if args.count_bytes else 0
                began = time.perf_counter()
                for _ in range(args.iters):
                    collective(size, group)
                elapsed = (time.perf_counter() - began) / args.iters
                after = int(counter.read_text()) if args.count_bytes else 0
                slowest = torch.tensor([elapsed], dtype=torch.float64)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                entry = samples.setdefault(f"{mode}@{size}", {"t": [], "w": []})
                entry["t"].append(slowest.item())
                entry["w"].append((after - before) / args.iters)
    out = {key: {"median_us": statistics.median(v["t"]) * 1e6, "min_us": min(v["t"]) * 1e6,
                 "wire_bytes": statistics.median(v["w"])} for key, v in samples.items()}
    dist.destroy_process_group()
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--modes", default="")
    parser.add_argument("--master", default="")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--device", default="")
    parser.add_argument("--count-bytes", type=int, default=0)
    parser.add_argument("--sizes", default="")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--op", choices=["all_reduce", "all_gather", *OTHER_OPS],
                        default="all_reduce")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small-repeats", type=int, default=21,
                        help="repeats of the small-message part (cheap; plans differ there by less than the noise of a few)")
    parser.add_argument("--mbit", type=float, default=1000)
    parser.add_argument("--small-only", action="store_true", help="skip the 16 MiB part")
    parser.add_argument("--large-only", action="store_true", help="skip the small-message part")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "multihost"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with ShapedLink(("domino-hier-a", "domino-hier-b"), ("10.78.0.1", "10.78.0.2")) as link:
        if not link.up:
            raise SystemExit("needs root, iproute2 and tc to make two network namespaces; nothing measured")
        link.shape(args.mbit)
        rows = []
        large = 16 << 20
        if not args.small_only:
            # All-reduce, then all-gather (16 MiB gathered): every plan, both rank orders.
            for op, part, layouts in (
                    ("all_reduce", "16 MiB", (("", CONTIGUOUS, LARGE),
                                              (", interleaved ranks", INTERLEAVED, ["flat ring"]))),
                    ("all_gather", "all_gather 16 MiB", (("", CONTIGUOUS, GATHER),
                                                         (", interleaved ranks", INTERLEAVED,
                                                          ["hierarchical", "flat"])))):
                for placement, hosts, modes in layouts:
                    res = launch(link, modes, hosts, [large], iters=2, repeats=args.repeats, op=op)
                    for mode in modes:
                        r = res[f"{mode}@{large}"]
                        name = mode + placement
                        rows.append({"part": part, "mode": name, "bytes": large, **r})
                        print(f"{part}  {name:<30} {r['median_us'] / 1e3:8.1f} ms  "
                              f"{r['wire_bytes'] / 2**20:7.1f} MiB on the link", flush=True)
            for op in OTHER_OPS:
                res = launch(link, OTHER, CONTIGUOUS, [large], iters=2, repeats=args.repeats, op=op)
                for mode in OTHER:
                    r = res[f"{mode}@{large}"]
                    rows.append({"part": f"{op} 16 MiB", "mode": mode, "bytes": large, **r})
                    print(f"{op} 16 MiB  {mode:<30} {r['median_us'] / 1e3:8.1f} ms  "
                          f"{r['wire_bytes'] / 2**20:7.1f} MiB on the link", flush=True)
        small = [] if args.large_only else [8, 64, 512, 4096]
        res = launch(link, SMALL, CONTIGUOUS, small, iters=200, repeats=args.small_repeats) if small else {}
        for size in small:
            for mode in SMALL:
                r = res[f"{mode}@{size}"]
                rows.append({"part": "small", "mode": mode, "bytes": size, **r})
                print(f"{size:>6} B {mode:<30} {r['median_us']:8.1f} us", flush=True)
    write(rows, args)


def link_time_ms(row: dict, args) -> float:
    """The shortest time the link allows: each direction carries the bytes one host sends, at
    the shaped rate, so the busier direction bounds it. (An all-reduce loads both directions
    alike; a broadcast or reduce sends nearly everything one way.)"""
    return row["busiest_bytes"] / (args.mbit * 1e6 / 8) * 1e3


def write(rows: list[dict], args) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["part", "mode", "bytes", "median_us", "min_us", "wire_bytes",
                                          "busiest_bytes"])
        w.writeheader()
        w.writerows(rows)
    big = {r["mode"]: r for r in rows if r["part"] == "16 MiB"}
    hier = big.get("hierarchical", {"wire_bytes": 1, "median_us": 1})
    lines = [f"2 hosts x 2 ranks, veth shaped to {args.mbit:.0f} Mbit/s, all-reduce of 16 MiB float32 "
             f"(median of {args.repeats} repeats; modes take turns within one run)", "",
             "| plan | time (ms) | on the link (MiB) | the link's time for the busier direction's bytes (ms) | time / link time | hierarchical's share of its bytes | hierarchical speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in big.items():
        link_ms = link_time_ms(r, args)
        lines.append(f"| {name} | {r['median_us'] / 1e3:.1f} | {r['wire_bytes'] / 2**20:.1f} | "
                     f"{link_ms:.1f} | {r['median_us'] / 1e3 / link_ms:.2f}x | "
                     f"{100 * hier['wire_bytes'] / r['wire_bytes']:.0f}% | {r['median_us'] / hier['median_us']:.2f}x |")
    gather = {r["mode"]: r for r in rows if r["part"] == "all_gather 16 MiB"}
    if gather:
        lines += ["", "all_gather_into_tensor, 16 MiB gathered (4 MiB per rank):", "",
                  "| plan | time (ms) | on the link (MiB) | the link's time for the busier direction's bytes (ms) | time / link time |",
                  "|---|---:|---:|---:|---:|"]
        for name, r in gather.items():
            link_ms = link_time_ms(r, args)
            lines.append(f"| {name} | {r['median_us'] / 1e3:.1f} | {r['wire_bytes'] / 2**20:.1f} | "
                         f"{link_ms:.1f} | {r['median_us'] / 1e3 / link_ms:.2f}x |")
    others = [r for r in rows if r["part"].split(" ")[0] in OTHER_OPS]
    if others:
        lines += ["", "Broadcast (root 0), reduce (root 0) and reduce_scatter_tensor (16 MiB input), "
                  "16 MiB, host-contiguous ranks:", "",
                  "| op | plan | time (ms) | on the link (MiB) | the link's time for the busier direction's bytes (ms) | time / link time | vs flat |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for op in OTHER_OPS:
            cells = {r["mode"]: r for r in others if r["part"] == f"{op} 16 MiB"}
            for name, r in cells.items():
                link_ms = link_time_ms(r, args)
                lines.append(f"| {op} | {name} | {r['median_us'] / 1e3:.1f} | "
                             f"{r['wire_bytes'] / 2**20:.1f} | {link_ms:.1f} | "
                             f"{r['median_us'] / 1e3 / link_ms:.2f}x | "
                             f"{cells['flat']['median_us'] / r['median_us']:.2f}x |")
    lines += ["", f"Messages of 4 KiB or less, latency (us, median of {args.small_repeats} repeats of 200 calls):", "",
              "| bytes | " + " | ".join(SMALL) + " | auto vs best forced |", "|---:|" + "---:|" * (len(SMALL) + 1)]
    for size in sorted({r["bytes"] for r in rows if r["part"] == "small"}):
        cells = {r["mode"]: r["median_us"] for r in rows if r["part"] == "small" and r["bytes"] == size}
        best = min(v for k, v in cells.items() if k != "auto (router)")
        lines.append(f"| {size} | " + " | ".join(f"{cells[m]:.0f}" for m in SMALL) +
                     f" | {cells['auto (router)'] / best:.2f}x |")
    Path(out.with_suffix(".md")).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib missing: no plot")
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(big)
    a.barh(names, [big[n]["median_us"] / 1e3 for n in names])
    a.set_xlabel("16 MiB all-reduce, ms")
    b.barh(names, [big[n]["wire_bytes"] / 2**20 for n in names], color="tab:orange")
    b.set_xlabel("MiB on the inter-host link per all-reduce")
    b.set_yticks([])
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


if __name__ == "__main__":
    main()
