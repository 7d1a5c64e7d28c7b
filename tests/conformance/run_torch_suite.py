"""Runs PyTorch's own distributed test suite on gloo and on domino, and lists what differs.

The suite (`DistributedTest._DistTestBase` in torch/testing/_internal/distributed/
distributed_test.py, what test/distributed/test_distributed_spawn.py runs) is the closest
thing to a specification of a torch.distributed backend. Gloo is the reference: a (test,
world size) row counts as passed when both backends pass it and as failed when gloo passes
and domino does not; rows gloo itself skips or fails are listed but not counted. Each run
is a fresh `suite_child.py` process in its own session, so a crash or a hang costs one row:
on timeout the whole process group is killed. Gloo then domino for each test, one test at a
time unless --jobs says otherwise.

    python tests/conformance/run_torch_suite.py --world 2 3 --out tests/conformance/results.md

Exit status 0 iff no row failed. The last line printed is "N passed, M failed".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = HERE / "suite_child.py"
BACKENDS = ("gloo", "domino")
# Variables that would turn the suite's skips into passes, or change what it runs.
DROPPED_ENV = ("SANDCASTLE", "TW_JOB_USER", "BACKEND", "WORLD_SIZE", "RANK", "MASTER_PORT",
               "INIT_METHOD", "TEMP_DIR", "TORCH_DISTRIBUTED_DEBUG")


def child_env(backend: str, world: int, tmp: str, args: argparse.Namespace) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(
        BACKEND=backend, WORLD_SIZE=str(world), TEMP_DIR=tmp, TMPDIR=tmp,
        INIT_METHOD=f"file://{tmp}/init_file", CONFORMANCE_GATES=args.gates,
        CONFORMANCE_PROFILING="1" if args.expect_profiler_events else "0",
        PYTORCH_PRINT_REPRO_ON_FAILURE="0",
        # The suite's own timeout fires first and logs each hung rank's Python stack.
        DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(max(10, args.timeout - 15)),
    )
    return env


def list_tests(args: argparse.Namespace) -> list[str]:
    tmp = tempfile.mkdtemp(prefix="conformance-list-")
    try:
        done = subprocess.run([sys.executable, str(CHILD), "--list"], capture_output=True,
                              text=True, env=child_env("gloo", 2, tmp, args), cwd=tmp,
                              timeout=300)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"listing the suite failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    names = [n for n in done.stdout.split() if n.startswith("test_")]
    if args.list:
        wanted = [line.split("#")[0].strip() for line in Path(args.list).read_text().splitlines()]
        wanted = [w for w in wanted if w]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            sys.exit(f"not in the suite: {', '.join(unknown)}")
        names = [n for n in names if n in set(wanted)]
    if args.tests:
        names = [n for n in names if re.search(args.tests, n)]
    return names


def domino_shm() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if "domino" in n.lower()}
    except FileNotFoundError:
        return set()


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# What a run looks like when torch_domino was being reinstalled under it.
REINSTALL_SIGNS = re.compile(r"No module named 'torch_domino"
                             r"|(ImportError|OSError)[^\n]*torch_domino"
                             r"|torch_domino[^\n]*cannot open shared object")


def installed_package_stamp() -> str:
    """When the installed torch_domino last changed, to tell whether a run mixed builds."""
    spec = importlib.util.find_spec("torch_domino")
    if spec is None or not spec.origin:
        return "not installed"
    files = [p for p in Path(spec.origin).parent.rglob("*") if p.is_file()]
    newest = max(p.stat().st_mtime for p in files)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(newest))


def wait_for_package(limit_s: float = 900) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        ok = subprocess.run([sys.executable, "-c", "import torch_domino"],
                            capture_output=True).returncode == 0
        if ok:
            return
        time.sleep(10)


def run_one(test: str, backend: str, world: int, args: argparse.Namespace) -> dict:
    for _ in range(3):
        outcome = run_once(test, backend, world, args)
        if outcome["status"] == "pass" or not REINSTALL_SIGNS.search(outcome["message"]):
            break
        print(f"  torch_domino was not importable during {test} on {backend}: "
              "waiting for the package, then running it again", flush=True)
        wait_for_package()
    return outcome


def run_once(test: str, backend: str, world: int, args: argparse.Namespace) -> dict:
    tmp = tempfile.mkdtemp(prefix=f"conformance-{backend}-")
    result_file, log_file = Path(tmp, "result.json"), Path(tmp, "log.txt")
    shm_before = domino_shm()
    start = time.monotonic()
    with open(log_file, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), test, "--result", str(result_file)],
            env=child_env(backend, world, tmp, args), cwd=tmp, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=args.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_group(proc)  # also ends rank processes a finished child left behind
        proc.wait()
    seconds = round(time.monotonic() - start, 1)
    log_tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-40:])
    if timed_out:
        outcome = {"status": "timeout",
                   "message": f"timeout: killed after {args.timeout}s\n{log_tail}"}
    elif result_file.exists():
        outcome = json.loads(result_file.read_text())
        if outcome["status"] == "fail" and "terminated or timed out after" in outcome["message"]:
            outcome["status"] = "timeout"
            outcome["message"] += "\n" + log_tail
    else:
        outcome = {"status": "fail",
                   "message": f"child exited {proc.returncode} without a result\n{log_tail}"}
    outcome.update(test=test, backend=backend, world=world, seconds=seconds)
    leaked = domino_shm() - shm_before
    if leaked and backend == "domino":
        outcome["leaked_shm"] = sorted(leaked)
    shutil.rmtree(tmp, ignore_errors=True)
    return outcome


def error_lines(message: str, limit: int = 8) -> list[str]:
    """The exception lines of a failure, without frames or C++ stacks, per failing rank."""
    chunks = re.split(r"Process \d+ exited with error code \d+ and exception:\n", message)
    chunks = chunks[1:] if len(chunks) > 1 else chunks
    seen: list[str] = []
    for chunk in chunks:
        lines = chunk.rstrip().splitlines()
        frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
        tail = lines[frames[-1] + 2:] if frames else lines[-limit:]
        tail = [line for line in tail if line.strip(" ^~") and not line.startswith(
            ("frame #", "Exception raised from", "To execute this test"))]
        for line in tail[:limit]:
            if line not in seen:
                seen.append(line)
    return seen[:limit] or [message.strip()[-300:]]


def cell(outcome: dict) -> str:
    return {"pass": "pass", "skip": "skip", "fail": "FAIL", "timeout": "TIMEOUT"}[
        outcome["status"]]


def verdict(gloo: dict, domino: dict) -> str:
    if gloo["status"] == "pass":
        return "passed" if domino["status"] == "pass" else "failed"
    if gloo["status"] == "skip":
        return "domino-only-pass" if domino["status"] == "pass" else "gloo-skipped"
    return "domino-only-pass" if domino["status"] == "pass" else "gloo-failed"


def note(gloo: dict, domino: dict) -> str:
    if gloo["status"] != "pass":
        text = f"gloo: {error_lines(gloo['message'])[0]}"
    elif domino["status"] != "pass":
        text = error_lines(domino["message"])[0]
    else:
        text = ""
    if domino.get("leaked_shm"):
        text = f"left in /dev/shm: {' '.join(domino['leaked_shm'])}; {text}"
    return text.replace("|", "\\|").replace("`", "'")[:200]


def report(rows: list[tuple[dict, dict]], args: argparse.Namespace, seconds: float) -> str:
    counts = {k: 0 for k in ("passed", "failed", "gloo-skipped", "gloo-failed",
                             "domino-only-pass")}
    for gloo, domino in rows:
        counts[verdict(gloo, domino)] += 1
    out = ["# PyTorch distributed suite: gloo vs domino", "",
           f"Command: `{' '.join(sys.argv)}`  ",
           f"Gates: {args.gates}; profiler events expected: {args.expect_profiler_events}; "
           f"per-test timeout {args.timeout}s; wall time {seconds / 60:.1f} min.  ",
           f"torch_domino installed files last changed: {args.stamp_start}"
           + ("" if args.stamp_now == args.stamp_start else
              f", and again at {args.stamp_now} during this run (results mix builds)"), "",
           "| test | world | gloo | domino | note |", "| --- | --- | --- | --- | --- |"]
    for gloo, domino in rows:
        out.append(f"| {gloo['test']} | {gloo['world']} | {cell(gloo)} | {cell(domino)} | "
                   f"{note(gloo, domino)} |")
    failed = [(g, d) for g, d in rows if verdict(g, d) == "failed"]
    if failed:
        out += ["", "## Rows where gloo passes and domino does not", ""]
        for gloo, domino in failed:
            out += [f"### {domino['test']} (world {domino['world']}): {cell(domino)}", "",
                    "```", *error_lines(domino["message"], limit=15), "```", ""]
    out += ["", f"gloo: {sum(g['status'] == 'pass' for g, _ in rows)} pass, "
                f"{sum(g['status'] == 'skip' for g, _ in rows)} skip, "
                f"{sum(g['status'] in ('fail', 'timeout') for g, _ in rows)} fail",
            f"gloo-skipped: {counts['gloo-skipped']}, gloo-failed: {counts['gloo-failed']}, "
            f"domino-only-pass: {counts['domino-only-pass']}",
            f"{counts['passed']} passed, {counts['failed']} failed"]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--tests", help="only tests whose name matches this regex")
    parser.add_argument("--list", help="only the tests named in this file, one per line")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test and backend")
    parser.add_argument("--out", default=str(HERE / "results.md"), help="markdown report")
    parser.add_argument("--json", help="also write every outcome here")
    parser.add_argument("--jobs", type=int, default=1, help="tests at once (default 1)")
    parser.add_argument("--gates", choices=("gloo", "strict"), default="gloo",
                        help="gloo: domino also runs the tests the suite keeps for gloo "
                             "by name (default); strict: only where its feature tables allow")
    parser.add_argument("--expect-profiler-events", action="store_true",
                        help="require 'domino:<op>' autograd profiler events, as for gloo")
    args = parser.parse_args()

    args.stamp_start = args.stamp_now = installed_package_stamp()
    names = list_tests(args)
    if not names:
        sys.exit("no test selected")
    todo = [(world, name) for world in args.world for name in names]
    rows: dict[int, tuple[dict, dict]] = {}
    lock, start = threading.Lock(), time.monotonic()

    def run_row(index: int) -> None:
        world, name = todo[index]
        gloo, domino = (run_one(name, backend, world, args) for backend in BACKENDS)
        with lock:
            rows[index] = (gloo, domino)
            args.stamp_now = installed_package_stamp()
            print(f"[{len(rows)}/{len(todo)}] w{world} {name}: gloo {cell(gloo)} "
                  f"{gloo['seconds']}s, domino {cell(domino)} {domino['seconds']}s"
                  f"  {verdict(gloo, domino)}", flush=True)
            done = [rows[i] for i in sorted(rows)]
            Path(args.out).write_text(report(done, args, time.monotonic() - start))

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(run_row, range(len(todo))))

    ordered = [rows[i] for i in range(len(todo))]
    text = report(ordered, args, time.monotonic() - start)
    Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps([o for row in ordered for o in row], indent=1))
    print(text, end="")
    return 0 if all(verdict(g, d) != "failed" for g, d in ordered) else 1


if __name__ == "__main__":
    sys.exit(main())
