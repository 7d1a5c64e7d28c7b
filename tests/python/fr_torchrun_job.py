"""A job for torchrun whose ranks behave as training scripts do when one of them falls behind:
rank 1 skips the second all-reduce and goes on computing; the others raise at the group timeout
and exit at once, and torchrun then stops rank 1. Every rank's Flight Recorder dump must be on
disk all the same. `import torch` alone registers the backend (its entry point).

argv: "agent-store" (torchrun's agent hosts the job's store, its default) or "rank-store" (rank
0's process hosts it, as init_process_group does outside torchrun), then that store's port."""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

store, port = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
hosts = int(os.environ.get("FR_JOB_HOSTS", "1"))
if hosts > 1:
    # Simulated hosts: the local ranks split evenly between them.
    per_host = int(os.environ["LOCAL_WORLD_SIZE"]) // hosts
    os.environ["DOMINO_HOST_ID"] = f"host{int(os.environ['LOCAL_RANK']) // per_host}"
if store == "rank-store":
    os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "False"
    os.environ["MASTER_PORT"] = port

# Set-up and the first all-reduce get time on a loaded machine; the hang a short timeout.
dist.init_process_group("domino", timeout=timedelta(seconds=60))
dist.all_reduce(torch.ones(4))
dist.distributed_c10d._set_pg_timeout(timedelta(seconds=2))
if rank == 1:
    time.sleep(120)  # compute that never ends before torchrun stops this rank
    sys.exit(0)
dist.all_reduce(torch.ones(4))  # raises at the timeout; the script exits with it
