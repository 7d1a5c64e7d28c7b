"""Builds of torch-domino against each other on one host, in one run.

    python bench/builds/compare_builds.py --build before=DIR --build after=DIR [--rounds 3] \
        [python -m torch_domino.bench arguments]

DIR is a directory holding an installed torch_domino (e.g. made by
`pip install --no-deps --no-build-isolation --target DIR <checkout>`); the first build is the
baseline. The script runs `python -m torch_domino.bench --backends domino` once per round and
build, the builds' order reversed every other round, so the machine's drift touches all alike,
and reports per op, world and size the median over rounds of each build's best batch, and each
build's time over the baseline's. Results: builds.csv, builds.md and builds.png in --out
(default bench/results).
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path


def run_bench(install: str, out: Path, bench_args: list[str]) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=install + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "torch_domino.bench", "--backends", "domino", "--out", str(out),
           *bench_args]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(out / "collectives.csv") as f:
        return list(csv.DictReader(f))


def size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    args, bench_args = parser.parse_known_args()
    builds = [tuple(b.split("=", 1)) for b in args.build]
    if len(builds) < 2 or any(len(b) != 2 for b in builds):
        parser.error("give at least two --build LABEL=DIR")
    labels = [label for label, _ in builds]
    times: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for label, install in (builds if r % 2 == 0 else builds[::-1]):
                out = Path(scratch) / f"{label}{r}"
                out.mkdir()
                for row in run_bench(install, out, bench_args):
                    key = (row["op"], int(row["world"]), int(row["bytes"]))
                    times[key][label].append(float(row["time_us_min"]))
                print(f"round {r + 1}/{args.rounds}: {label} done", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = labels[0]
    rows = []
    for (op, world, nbytes), by in sorted(times.items()):
        row = {"op": op, "world": world, "bytes": nbytes}
        for label in labels:
            row[f"{label}_us"] = round(statistics.median(by[label]), 2)
        for label in labels[1:]:
            row[f"{label}_over_{base}"] = round(row[f"{label}_us"] / row[f"{base}_us"], 3)
        rows.append(row)
    with open(out / "builds.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["Builds: " + "; ".join(f"{label} = {install}" for label, install in builds) +
             f". {args.rounds} rounds, the order reversed every other round; each cell the median "
             "over rounds of the build's best batch (us).", ""]
    for op, world in sorted({(r["op"], r["world"]) for r in rows}):
        lines += [f"**{op}, world {world}**", "",
                  "| size | " + " | ".join(f"{label} us" for label in labels) + " | " +
                  " | ".join(f"{label} / {base}" for label in labels[1:]) + " |",
                  "|---" * (2 * len(labels)) + "|"]
        for r in rows:
            if (r["op"], r["world"]) == (op, world):
                lines.append(f"| {size(r['bytes'])} | " +
                             " | ".join(str(r[f"{label}_us"]) for label in labels) + " | " +
                             " | ".join(f"{r[f'{label}_over_{base}']:.2f}" for label in labels[1:]) +
                             " |")
        lines.append("")
    (out / "builds.md").write_text("\n".join(lines))
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for op, world in sorted({(r["op"], r["world"]) for r in rows}):
            mine = [r for r in rows if (r["op"], r["world"]) == (op, world)]
            for label in labels[1:]:
                ax.plot([r["bytes"] for r in mine], [r[f"{label}_over_{base}"] for r in mine],
                        marker="o", label=f"{op}, world {world}, {label}")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes")
        ax.set_ylabel(f"time / {base}'s")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "builds.png", dpi=120)
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
