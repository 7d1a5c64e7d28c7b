"""One rank of a multi-process test: joins the group, runs a worker function, reports JSON."""

import datetime
import importlib
import json
import os
import signal
import sys
import threading

import torch
import torch.distributed as dist

import torch_domino  # noqa: F401  registers "domino"

from ranks import RESULT_MARK


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("kill_after_s") is not None:
        # Dies by SIGKILL, the way an OOM-killed or crashed rank does: no cleanup runs.
        timer = threading.Timer(spec["kill_after_s"], lambda: os.kill(os.getpid(), signal.SIGKILL))
        timer.daemon = True
        timer.start()
    module_name, _, function_name = spec["function"].rpartition(".")
    module = importlib.import_module(module_name or "workers")
    function = getattr(module, function_name)
    backend = spec["backend"]
    if backend != "none":
        dist.init_process_group(
            backend,
            init_method=spec["init_method"],
            rank=spec["rank"],
            world_size=spec["world"],
            timeout=datetime.timedelta(seconds=spec["group_timeout_s"]),
        )
    value = function(spec["rank"], spec["world"], *spec["args"])
    if backend != "none" and dist.is_initialized():
        dist.destroy_process_group()
    print(RESULT_MARK + json.dumps(value), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
