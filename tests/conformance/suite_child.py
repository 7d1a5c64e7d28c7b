"""Runs one test of PyTorch's own distributed suite on one backend, in this process.

`run_torch_suite.py` starts this script once per (test, backend, world size) so that a crash
or a hang stays contained. It mirrors what `test/distributed/test_distributed_spawn.py` does
(that file is not in the wheel): a TestCase built from `TestDistBackend` and
`DistributedTest._DistTestBase`, whose setUp spawns one process per rank. Those rank
processes re-import this file (multiprocessing "spawn"), so everything the suite must see at
import time happens at module level, before `distributed_test` is imported.

How "domino" enters the suite, like a third-party backend such as torch_ucc does:
  * it is added to every `DistTestCases.backend_feature` set that holds "gloo", and to
    "plugin";
  * CONFORMANCE_PROFILING=1 also adds it to the suite's profiling allow-lists (where gloo is),
    so collectives must show up in the autograd profiler as "domino:<op>" events as gloo's do
    as "gloo:<op>". Off by default: that check runs before the result checks and would hide
    them;
  * CONFORMANCE_GATES=gloo (the default) also lets domino through the suite's gates that name
    gloo itself ("Only gloo backend supports timeouts", `require_backend_is_available({"gloo"})`):
    the suite is imported as if BACKEND were "gloo", then its BACKEND becomes a "domino" that
    compares equal to "gloo", so the tests' own `BACKEND == "gloo"` branches take the CPU path.
    CONFORMANCE_GATES=strict leaves those gates shut, as for any backend that is not gloo.

Every rank checks, right after the suite's `init_process_group`, that the default group
really is the backend under test (by name and by the C++ class behind it) and fails loudly
if not. Usage: suite_child.py TEST --result FILE, or suite_child.py --list.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
import unittest

REAL_BACKEND = os.environ.setdefault("BACKEND", "gloo")
GATES = os.environ.get("CONFORMANCE_GATES", "gloo")
EXPECT_PROFILING = os.environ.get("CONFORMANCE_PROFILING") == "1"
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.gettempdir())

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import torch_domino  # noqa: E402,F401  (registers "domino")
from torch.testing._internal import common_distributed, common_utils  # noqa: E402

IMPL_CLASS = {"gloo": "ProcessGroupGloo", "domino": "ProcessGroupDomino"}
MARK_DIR_VAR = "CONFORMANCE_MARK_DIR"


class GlooStandIn(str):
    """The string "domino" that also equals "gloo", for the suite's run-time backend checks."""

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other) or other == "gloo"

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


def _add_domino_where_gloo_is(tables: dict) -> None:
    for backends in tables.values():
        if "gloo" in backends:
            backends.add("domino")


_add_domino_where_gloo_is(common_distributed.DistTestCases.backend_feature)
_add_domino_where_gloo_is(common_distributed.DistTestCases.skip_collective)
common_distributed.DistTestCases.backend_feature["plugin"].add("domino")

_stand_in = REAL_BACKEND == "domino" and GATES == "gloo"
if _stand_in:
    os.environ["BACKEND"] = "gloo"
try:
    from torch.testing._internal.distributed import distributed_test as suite  # noqa: E402
finally:
    os.environ["BACKEND"] = REAL_BACKEND
if _stand_in:
    suite.BACKEND = GlooStandIn("domino")

if EXPECT_PROFILING:
    for _allow_list in (suite.PROFILING_SUPPORTED_BACKENDS,
                        suite.CUDA_PROFILING_SUPPORTED_BACKENDS,
                        suite.SEND_RECV_PROFILING_SUPPORTED_BACKENDS):
        if "gloo" in _allow_list and "domino" not in _allow_list:
            _allow_list.append("domino")


def backend_problem() -> str | None:
    """Why the default group is not the backend under test, or None when it is."""
    name = dist.get_backend()
    group = dist.distributed_c10d._get_default_group()
    impl = type(group._get_backend(torch.device("cpu"))).__name__
    if name != REAL_BACKEND or impl != IMPL_CLASS[REAL_BACKEND]:
        return (f"conformance backend check failed: expected {REAL_BACKEND} "
                f"({IMPL_CLASS[REAL_BACKEND]}), the default group is {name} ({impl})")
    mark_dir = os.environ.get(MARK_DIR_VAR)
    if mark_dir:
        with open(os.path.join(mark_dir, f"rank{dist.get_rank()}"), "w") as f:
            f.write(f"{name} {impl}\n")
    return None


class TestDistBackendWithSpawn(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    def run_test(self, test_name, parent_pipe):
        # Called in each rank process, after the suite's init_process_group and first barrier.
        problem = backend_problem()
        if problem:
            print(problem, file=sys.stderr, flush=True)
            parent_pipe.send(problem)
            sys.exit(self.TEST_ERROR_EXIT_CODE)
        super().run_test(test_name, parent_pipe)


def test_names() -> list[str]:
    return sorted(n for n in dir(suite.DistributedTest._DistTestBase) if n.startswith("test_"))


def run_one(test_name: str) -> dict:
    if common_utils.IS_SANDCASTLE:
        raise RuntimeError("IS_SANDCASTLE is set: the suite's skips would report as passes")
    mark_dir = tempfile.mkdtemp(prefix="marks-")
    os.environ[MARK_DIR_VAR] = mark_dir
    result = unittest.TestResult()
    start = time.monotonic()
    TestDistBackendWithSpawn(test_name).run(result)
    seconds = time.monotonic() - start
    verified = sorted(os.listdir(mark_dir))

    if result.skipped:
        status, message = "skip", result.skipped[0][1]
    elif result.failures or result.errors:
        status, message = "fail", (result.failures + result.errors)[0][1]
    elif result.unexpectedSuccesses:
        status, message = "fail", "unexpected success of an expected failure"
    elif not verified:
        status, message = "fail", "passed, but no rank process confirmed its backend"
    else:
        status, message = "pass", "expected failure" if result.expectedFailures else ""
    return {"test": test_name, "backend": REAL_BACKEND, "world": int(os.environ["WORLD_SIZE"]),
            "status": status, "message": message, "seconds": round(seconds, 2),
            "verified_ranks": verified}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test", nargs="?", help="a test method of _DistTestBase")
    parser.add_argument("--result", help="write the outcome here as JSON")
    parser.add_argument("--list", action="store_true", help="print the suite's test names")
    args = parser.parse_args()
    if args.list:
        print("\n".join(test_names()))
        return 0
    if not args.test:
        parser.error("name a test, or pass --list")
    try:
        outcome = run_one(args.test)
    except Exception:
        outcome = {"test": args.test, "backend": REAL_BACKEND, "status": "fail",
                   "message": traceback.format_exc(), "seconds": 0, "verified_ranks": []}
    print(f"{outcome['status'].upper()} {args.test} on {REAL_BACKEND}\n{outcome['message']}",
          flush=True)
    if args.result:
        with open(args.result, "w") as f:
            json.dump(outcome, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
