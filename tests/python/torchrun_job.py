"""A job for torchrun: six all-reduces on the domino backend, checked. In its first incarnation
the last rank fails at step 3, by an exception or by SIGKILL, while the others are in an
all-reduce; torchrun --max-restarts 1 must then start a second incarnation that finishes."""

import json
import os
import signal
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_domino  # noqa: F401  (registers the backend)

failure, out_dir = sys.argv[1], sys.argv[2]
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])


def record(**fields) -> None:
    # A file per incarnation and rank: the ranks' stdout lines interleave.
    with open(os.path.join(out_dir, f"attempt{attempt}-rank{rank}.json"), "w") as f:
        json.dump({"attempt": attempt, "rank": rank, "pid": os.getpid(), **fields}, f)


record(done=False)
# torchrun stops the survivors with SIGTERM once its monitor sees the failed rank, which can come
# before they name the failure themselves. Python runs this handler only after the collective
# returns, so a survivor still reports how its call ended; one that hangs is SIGKILLed after
# torchrun's grace period and leaves no error.
signal.signal(signal.SIGTERM, lambda *_: None)
# A hang shows as a failed init or collective within a minute, not as the test's own timeout.
dist.init_process_group("domino", timeout=timedelta(seconds=60))
world = dist.get_world_size()
try:
    for step in range(6):
        if attempt == 0 and rank == world - 1 and step == 3:
            if failure == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("this rank fails on purpose")
        t = torch.full((1 << 16,), float(rank + 1 + step))
        dist.all_reduce(t)
        expected = sum(r + 1 + step for r in range(world))
        assert torch.all(t == expected), (t[0].item(), expected)
except dist.DistBackendError as e:
    record(done=False, error=str(e))
    raise
record(done=True)
dist.destroy_process_group()
