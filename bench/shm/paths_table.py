"""Merges bench/shm/paths.sh's runs into one table: median microseconds per size, per world and
path, each round side by side, and the ratio the cost model's regimes rest on."""

from __future__ import annotations

import csv
import pathlib
import sys

MODES = ("direct", "rsag", "auto")


def _load(folder: pathlib.Path) -> dict[int, float]:
    with open(folder / "collectives.csv") as f:
        return {int(r["bytes"]): float(r["time_us_median"]) for r in csv.DictReader(f)}


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main(root: str) -> None:
    base = pathlib.Path(root)
    rounds = sorted({p.name.split("_")[0] for p in base.iterdir() if p.is_dir()})
    lines = ["# Shared-memory all-reduce paths, measured against each other", "",
             "`bash bench/shm/paths.sh DIR && python bench/shm/paths_table.py DIR` on the 2-core "
             "VM; rounds alternate direct, rsag and the default (auto, single-copy allowed) per "
             "world. Median microseconds per call; `rsag/direct` < 1 means slices win.", ""]
    rows = [["world", "bytes", "round", *MODES, "rsag/direct", "auto/best"]]
    for world in (2, 4):
        for rnd in rounds:
            runs = {m: _load(base / f"{rnd}_w{world}_{m}") for m in MODES}
            for size in sorted(runs["direct"]):
                t = {m: runs[m][size] for m in MODES}
                rows.append([str(world), str(size), rnd, *(f"{t[m]:.1f}" for m in MODES),
                             f"{t['rsag'] / t['direct']:.2f}",
                             f"{t['auto'] / min(t['direct'], t['rsag']):.2f}"])
    with open(base.parent / "shm_paths.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    lines.append("| " + " | ".join(rows[0]) + " |")
    lines.append("|" + "---|" * len(rows[0]))
    for r in rows[1:]:
        lines.append("| " + " | ".join([r[0], _size(int(r[1])), *r[2:]]) + " |")
    (base.parent / "shm_paths.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/shm_paths")
