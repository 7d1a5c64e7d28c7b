"""What splitting one reduction into more messages costs while the rank computes. Two ranks on
two simulated hosts (network namespaces over a tc-shaped veth link, as overlap_bench.py) issue
the same 4 MiB of async all-reduces on the high lane as 4, 8, 16 or 32 messages, then either
compute for 30 ms on the issuing thread (as a Domino layer does while its reductions travel) or
sleep, then wait for them all. The link needs about 34 ms for the bytes at 1000 Mbit/s, so with an
idle core every count takes that long; what a count adds beyond it while the rank computes is
what each message costs when the lane and the compute share the core. Cases take turns within
each repeat, so the VM's drift hits them alike.

    sudo python bench/overlap/messages_under_compute.py   # writes bench/results/messages_under_compute.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from shaped_link import ShapedLink, run_pair  # noqa: E402

TOTAL_BYTES = 4 << 20
COUNTS = (4, 8, 16, 32)
COMPUTE_S = 0.030


def worker(args) -> None:
    import torch
    import torch.distributed as dist

    import torch_domino

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"tcp://{args.master}:{args.port}",
                            rank=args.rank, world_size=2)
    buffers = {n: [torch.ones(TOTAL_BYTES // 4 // n) for _ in range(n)] for n in COUNTS}
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    samples = {(n, busy): [] for busy in (False, True) for n in COUNTS}
    for repeat in range(args.repeats + 2):
        for n, busy in samples:
            dist.barrier()
            began = time.perf_counter()
            with torch_domino.priority("high"):
                works = [dist.all_reduce(x, async_op=True) for x in buffers[n]]
            if busy:
                while time.perf_counter() - began < COMPUTE_S:
                    a @ b
            else:
                time.sleep(COMPUTE_S)
            for work in works:
                work.wait()
            if repeat >= 2:  # warm-up
                samples[(n, busy)].append(time.perf_counter() - began)
    result = {}
    for (n, busy), values in samples.items():
        t = torch.tensor([statistics.median(values), min(values)], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slower rank's time
        result[f"{n},{int(busy)}"] = [t[0].item() * 1e3, t[1].item() * 1e3]
    dist.destroy_process_group()
    if args.rank == 0:
        print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--mbit", type=float, default=1000.0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "messages_under_compute"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--master", default="127.0.0.1", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with ShapedLink() as link:
        if link.up:
            link.shape(args.mbit)
        where = (f"two network namespaces over a tc-shaped veth link at {args.mbit:.0f} Mbit/s"
                 if link.up else "one host (shared memory: not root, or no ip/tc)")
        port = 29500 + int(time.time()) % 300
        argv = lambda rank, master: [__file__, "--worker", "--rank", str(rank), "--port", str(port),
                                     "--master", master, "--repeats", str(args.repeats)]
        result = run_pair(link, argv, timeout=600)
    lines = ["# Messages under compute: 4 MiB of async all-reduces as N messages", "",
             f"TP=2 ranks, domino (UCX over TCP), high lane; {where}; {args.repeats} repeats, median (min) ms "
             f"from issue to the last wait; the issuing thread computes or sleeps {COMPUTE_S * 1e3:.0f} ms meanwhile",
             "", "| messages | bytes each | idle core | computing | computing minus idle |", "|---|---|---|---|---|"]
    for n in COUNTS:
        idle, busy = result[f"{n},0"], result[f"{n},1"]
        lines.append(f"| {n} | {TOTAL_BYTES // n // 1024} KiB | {idle[0]:.2f} ({idle[1]:.2f}) |"
                     f" {busy[0]:.2f} ({busy[1]:.2f}) | {busy[0] - idle[0]:+.2f} |")
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result))
    print(text)


if __name__ == "__main__":
    main()
