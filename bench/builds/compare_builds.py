"""Builds of torch-domino against each other, on every bench a change can touch, in one run.

    python bench/builds/compare_builds.py --build before=DIR --build after=DIR [--rounds 3] \
        [--benches collectives,dtypes,multihost-small,multihost-large,messages] \
        [python -m torch_domino.bench arguments]

DIR holds an installed torch_domino (e.g. `pip install --no-deps --no-build-isolation --target
DIR <checkout>`); the first build is the baseline. Each round runs every bench once per build,
the builds' order reversed every other round, so the machine's drift touches all alike. The
benches:

- collectives: `python -m torch_domino.bench --backends domino` on one host (the extra arguments
  go to it), each case's fastest batch;
- dtypes: bench/peers/dtype_bench.py with domino alone, all-reduce in float32, bfloat16 and
  float16 at world 2 and 4, each case's fastest batch (a reduction kernel touches these);
- multihost-small, multihost-large: bench/multihost/hier_bench.py across two simulated hosts
  (root: network namespaces), messages of 4 KiB or less and 16 MiB, every plan, median us;
- messages: bench/overlap/messages_under_compute.py, async all-reduces under compute on the
  shaped link, median ms from issue to the last wait.

A change to a wait loop, a transport, the router or a layer's schedule is compared on all of
them. Reports per bench, case and size the median over rounds and each build over the
baseline: builds.csv, builds.md and builds.png in --out (default bench/results).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(install: str, cmd: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=install + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def collectives(install: str, out: Path, extra: list[str]) -> dict:
    run(install, [sys.executable, "-m", "torch_domino.bench", "--backends", "domino", "--out",
                  str(out), *extra])
    with open(out / "collectives.csv") as f:
        return {(f"{r['op']}, world {r['world']}", int(r["bytes"])): float(r["time_us_min"])
                for r in csv.DictReader(f)}


def multihost(part: str):
    def bench(install: str, out: Path, extra: list[str]) -> dict:
        flag = "--small-only" if part == "small" else "--large-only"
        run(install, [sys.executable, str(ROOT / "bench/multihost/hier_bench.py"), flag,
                      "--small-repeats", "7", "--repeats", "3", "--out", str(out / "multihost")])
        with open(out / "multihost.csv") as f:
            return {(f"{r['part']} all_reduce, {r['mode']}", int(r["bytes"])): float(r["median_us"])
                    for r in csv.DictReader(f)}
    return bench


def dtypes(install: str, out: Path, extra: list[str]) -> dict:
    run(install, [sys.executable, str(ROOT / "bench/peers/dtype_bench.py"), "--backends", "domino",
                  "--seconds-per-size", "0.1", "--repeats", "3", "--out", str(out)])
    with open(out / "dtypes.csv") as f:
        return {(f"all_reduce {r['dtype']}, world {r['world']}", int(r["bytes"])):
                float(r["time_us"]) for r in csv.DictReader(f)}


def messages(install: str, out: Path, extra: list[str]) -> dict:
    run(install, [sys.executable, str(ROOT / "bench/overlap/messages_under_compute.py"),
                  "--repeats", "12", "--out", str(out / "messages")])
    result = json.loads((out / "messages.json").read_text())
    return {(f"4 MiB as N messages, {'computing' if busy == '1' else 'idle core'}", int(n)):
            value[0] for key, value in result.items() for n, busy in [key.split(",")]}


BENCHES = {"collectives": (collectives, "us"), "dtypes": (dtypes, "us"),
           "multihost-small": (multihost("small"), "us"),
           "multihost-large": (multihost("large"), "us"), "messages": (messages, "ms")}


def size(n: int, bench: str) -> str:
    if bench == "messages":
        return f"{n} msgs"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--benches", default="collectives",
                        help=f"comma-separated, of: {', '.join(BENCHES)}")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args, extra = parser.parse_known_args()
    builds = [tuple(b.split("=", 1)) for b in args.build]
    if len(builds) < 2 or any(len(b) != 2 for b in builds):
        parser.error("give at least two --build LABEL=DIR")
    benches = args.benches.split(",")
    unknown = [b for b in benches if b not in BENCHES]
    if unknown:
        parser.error(f"unknown bench {unknown}; known: {', '.join(BENCHES)}")
    labels = [label for label, _ in builds]
    times: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for label, install in (builds if r % 2 == 0 else builds[::-1]):
                for bench in benches:
                    out = Path(scratch) / f"{label}{r}{bench}"
                    out.mkdir()
                    for (case, nbytes), value in BENCHES[bench][0](install, out, extra).items():
                        times[(bench, case, nbytes)][label].append(value)
                print(f"round {r + 1}/{args.rounds}: {label} done", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = labels[0]
    rows = []
    for (bench, case, nbytes), by in sorted(times.items()):
        row = {"bench": bench, "case": case, "bytes": nbytes, "unit": BENCHES[bench][1]}
        for label in labels:
            row[label] = round(statistics.median(by[label]), 2)
        for label in labels[1:]:
            row[f"{label}_over_{base}"] = round(row[label] / row[base], 3)
        rows.append(row)
    with open(out / "builds.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["Builds: " + "; ".join(f"{label} = {install}" for label, install in builds) +
             f". {args.rounds} rounds, the order reversed every other round; each cell the median "
             "over rounds.", ""]
    for bench, case in sorted({(r["bench"], r["case"]) for r in rows}):
        mine = [r for r in rows if (r["bench"], r["case"]) == (bench, case)]
        unit = mine[0]["unit"]
        lines += [f"**{bench}: {case}**", "",
                  "| size | " + " | ".join(f"{label} {unit}" for label in labels) + " | " +
                  " | ".join(f"{label} / {base}" for label in labels[1:]) + " |",
                  "|---" * (2 * len(labels)) + "|"]
        for r in mine:
            lines.append(f"| {size(r['bytes'], bench)} | " +
                         " | ".join(str(r[label]) for label in labels) + " | " +
                         " | ".join(f"{r[f'{label}_over_{base}']:.2f}" for label in labels[1:]) +
                         " |")
        lines.append("")
    (out / "builds.md").write_text("\n".join(lines))
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(benches), figsize=(6 * len(benches), 4.5), squeeze=False)
        for ax, bench in zip(axes[0], benches):
            for case in sorted({r["case"] for r in rows if r["bench"] == bench}):
                mine = [r for r in rows if (r["bench"], r["case"]) == (bench, case)]
                for label in labels[1:]:
                    ax.plot([r["bytes"] for r in mine], [r[f"{label}_over_{base}"] for r in mine],
                            marker="o", label=f"{case}, {label}")
            ax.axhline(1.0, color="grey", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_title(bench)
            ax.set_ylabel(f"time / {base}'s")
            ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(out / "builds.png", dpi=120)
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
