"""What recording every op in the Flight Recorder costs an 8-byte all-reduce (2 ranks, one host).

Jobs with and without TORCH_FR_BUFFER_SIZE take turns (the order reversed every other round, so
the machine's drift touches both alike); each job times batches of back-to-back blocking
all-reduces and reports its fastest batch's time per call, as the slower rank saw it. Then the
recorder alone: build/python/bench/domino_flight_recorder_cost times record, started and
completed of one entry, without the op.

    python bench/flight_recorder/record_cost.py [--rounds 8]   # writes bench/results/flight_recorder.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker(rank: int, store: str, calls: int, batches: int) -> None:
    import torch
    import torch.distributed as dist

    import torch_domino  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("domino", init_method=f"file://{store}", rank=rank, world_size=2)
    x = torch.ones(2)
    for _ in range(500):
        dist.all_reduce(x)
    best = float("inf")
    for _ in range(batches):
        dist.barrier()
        began = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(x)
        elapsed = torch.tensor([(time.perf_counter() - began) / calls], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        best = min(best, elapsed.item())
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"us": best * 1e6}))


def job(recording: bool, calls: int, batches: int) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TORCH_FR_BUFFER_SIZE", None)
    env.pop("TORCH_NCCL_TRACE_BUFFER_SIZE", None)
    if recording:
        env["TORCH_FR_BUFFER_SIZE"] = "2000"
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(rank), store,
                                   str(calls), str(batches)], env=env, stdout=subprocess.PIPE,
                                  text=True) for rank in range(2)]
        outputs = [p.communicate(timeout=600)[0] for p in procs]
    return json.loads(outputs[0].strip().splitlines()[-1])["us"]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "flight_recorder.md"))
    args = parser.parse_args()
    times = {False: [], True: []}
    for r in range(args.rounds):
        for recording in ((False, True) if r % 2 == 0 else (True, False)):
            times[recording].append(job(recording, args.calls, args.batches))
        print(f"round {r + 1}: off {times[False][-1]:.2f} us, recording {times[True][-1]:.2f} us",
              flush=True)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    ratios = [b / a for a, b in zip(times[False], times[True])]
    lines = ["# Flight Recorder: the cost of recording", "",
             f"8-byte all-reduce, 2 ranks on one host (domino, shared memory), {args.rounds} "
             f"rounds of one job each way, alternating; each job's fastest batch of {args.calls} "
             "blocking calls (us per call, the slower rank's).", "",
             "| | median us | per round |", "|---|---|---|",
             f"| TORCH_FR_BUFFER_SIZE unset | {off:.2f} | {', '.join(f'{t:.2f}' for t in times[False])} |",
             f"| TORCH_FR_BUFFER_SIZE=2000 | {on:.2f} | {', '.join(f'{t:.2f}' for t in times[True])} |",
             "", f"Recording over not, round by round: median {statistics.median(ratios):.3f}x "
             f"({min(ratios):.3f} to {max(ratios):.3f}).", ""]
    cost = ROOT / "build" / "python" / "bench" / "domino_flight_recorder_cost"
    if cost.exists():
        said = subprocess.run([str(cost), "1000000"], env=dict(os.environ, TORCH_FR_BUFFER_SIZE="2000"),
                              capture_output=True, text=True).stdout.strip().splitlines()
        per_op = min(float(line.split(": ")[1].split()[0]) for line in said)
        lines += [f"The recorder alone (`{cost.relative_to(ROOT)} 1000000`, fastest of 5): "
                  f"{per_op:.0f} ns per op, {100 * per_op / 1000 / off:.2f}% of the all-reduce "
                  "above.", ""]
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
