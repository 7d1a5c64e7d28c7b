"""From a rank's SIGKILL to the survivors' first successful all-reduce on the shrunk group.

Each run starts the ranks afresh (a FileStore, so the store outlives any rank), has them stream
1 MiB all-reduces, and SIGKILLs the victims mid-stream: each victim writes the wall clock just
before it kills itself. The survivors catch the error, call dist.shrink_group with SHRINK_ABORT
and all-reduce on the new group; the time to that all-reduce's return, from the first victim's
death, is the recovery time (the slowest survivor's). Layouts: 4 ranks on one host (rank 3
dies); 2x2 simulated hosts (DOMINO_HOST_ID; UCX between them) where host b's ranks 2 and 3
die together; and 2x2 interleaved (ranks 0, 2 on host a, 1, 3 on host b) where rank 3 dies.

    python bench/shrink/shrink_bench.py --repeats 10    # writes bench/results/shrink.{csv,md}
"""

from __future__ import annotations

import argparse
import datetime
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = {
    "4 ranks, one host, rank 3 dies": {"world": 4, "victims": [3], "hosts": None},
    "2x2 simulated hosts, host b (ranks 2, 3) dies": {"world": 4, "victims": [2, 3],
                                                       "hosts": ["a", "a", "b", "b"]},
    # Host a's ranks wait on host b's survivor, which alone sees the death (its notice tells them).
    "2x2 interleaved simulated hosts (a b a b), rank 3 dies": {"world": 4, "victims": [3],
                                                                "hosts": ["a", "b", "a", "b"]},
}


def worker(args) -> None:
    import signal

    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import SHRINK_ABORT

    import torch_domino  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"file://{args.store}", rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=args.group_timeout))
    victims = json.loads(args.victims)
    big = torch.ones(1 << 18)  # 1 MiB
    step = 0
    try:
        while True:
            if args.rank in victims and step == args.kill_step:
                Path(args.out, f"killed.{args.rank}").write_text(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            dist.all_reduce(big)
            step += 1
    except RuntimeError:
        if args.rank in victims:  # another victim died first: this one dies on schedule
            Path(args.out, f"killed.{args.rank}").write_text(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
    detected = time.time()
    dist.shrink_group(sorted(victims), shrink_flags=SHRINK_ABORT)
    check = torch.ones(16)
    dist.all_reduce(check)
    recovered = time.time()
    assert check[0].item() == args.world - len(victims)
    Path(args.out, f"recovered.{args.rank}").write_text(json.dumps([detected, recovered]))
    dist.destroy_process_group()


def one_run(layout: dict, kill_step: int, group_timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="domino-shrink-bench-") as tmp:
        procs = []
        for rank in range(layout["world"]):
            env = dict(os.environ, OMP_NUM_THREADS="1")
            if layout["hosts"]:
                env["DOMINO_HOST_ID"] = layout["hosts"][rank]
            cmd = [sys.executable, __file__, "--worker", "--group-timeout", str(group_timeout),
                   "--rank", str(rank), "--world",
                   str(layout["world"]), "--store", f"{tmp}/store", "--out", tmp, "--victims",
                   json.dumps(layout["victims"]), "--kill-step", str(kill_step)]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        for p in procs:
            out, _ = p.communicate(timeout=300)
            if p.returncode not in (0, -9):
                raise SystemExit(f"a rank failed:\n{out[-3000:]}")
        killed = min(float(Path(tmp, f"killed.{v}").read_text()) for v in layout["victims"])
        survivors = [r for r in range(layout["world"]) if r not in layout["victims"]]
        times = [json.loads(Path(tmp, f"recovered.{r}").read_text()) for r in survivors]
        return {"detected_s": max(t[0] for t in times) - killed,
                "recovered_s": max(t[1] for t in times) - killed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--store", default="")
    parser.add_argument("--out", default="")
    parser.add_argument("--victims", default="[]")
    parser.add_argument("--kill-step", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--group-timeout", type=float, default=10.0,
                        help="seconds; how long a rank waits for a peer that never answers")
    parser.add_argument("--results", default=str(ROOT / "bench" / "results" / "shrink"))
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    rows = []
    for name, layout in LAYOUTS.items():
        runs = [one_run(layout, args.kill_step, args.group_timeout) for _ in range(args.repeats)]
        for key in ("detected_s", "recovered_s"):
            values = [r[key] for r in runs]
            rows.append({"layout": name, "measure": key.removesuffix("_s"),
                         "median_ms": round(statistics.median(values) * 1e3, 1),
                         "worst_ms": round(max(values) * 1e3, 1), "runs": len(values)})
        print(f"# {name}: " + ", ".join(f"{r['measure']} median {r['median_ms']} ms, worst "
                                        f"{r['worst_ms']} ms" for r in rows[-2:]), flush=True)
    out = Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = ["# From a SIGKILL to the survivors' first all-reduce on the shrunk group", "",
             f"domino; {args.repeats} runs per layout; group timeout {args.group_timeout:g} s; "
             "1 MiB all-reduces streaming when the victims "
             "die; times from the first victim's death to the slowest survivor's error "
             "(detected) and to its first all-reduce on the shrunk group (recovered)", "",
             "| layout | measure | median ms | worst ms | runs |", "|---|---|---:|---:|---:|"]
    lines += [f"| {r['layout']} | {r['measure']} | {r['median_ms']} | {r['worst_ms']} | {r['runs']} |"
              for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
