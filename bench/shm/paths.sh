#!/bin/bash
# The shared-memory transport's all-reduce paths against each other, in alternating rounds:
# direct (every rank reduces the whole message), rsag (each rank its slice) and the default
# (which may read peers' memory in place). ShmCosts.cpp's regime ratios come from this.
# Usage: bash bench/shm/paths.sh [OUT_DIR]   (then python bench/shm/paths_table.py OUT_DIR)
set -euo pipefail
out=${1:-bench/results/shm_paths}
mkdir -p "$out"
for round in 1 2; do
  for world in 2 4; do
    for mode in direct rsag auto; do
      settings=()
      [ "$mode" = auto ] || settings=(DOMINO_ALGO=$mode DOMINO_SINGLE_COPY=off)
      env "${settings[@]}" python -m torch_domino.bench --worlds "$world" --backends domino \
        --ops all_reduce --min-bytes 1K --max-bytes 64M --seconds-per-size 0.25 --repeats 5 \
        --out "$out/r${round}_w${world}_${mode}" > "$out/r${round}_w${world}_${mode}.log" 2>&1
    done
  done
done
