"""What domino detected and decided: the host (hwloc) and, for a group, where its ranks sit.

    python -m torch_domino.topology            # this host (see topology.py)
    python -m torch_domino.topology --json
    torchrun --nproc-per-node 2 -m torch_domino.topology   # also the group's layout
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

from . import _C


def _domino_backend(group):
    group = group if group is not None else dist.group.WORLD
    if group is None:
        raise ValueError("torch_domino.topology(group): no process group; call init_process_group first")
    for device in ("cpu", "cuda"):
        try:
            backend = group._get_backend(torch.device(device))
        except RuntimeError:
            continue
        if isinstance(backend, _C.ProcessGroupDomino):
            return group, backend
    raise ValueError("torch_domino.topology(group): the group has no domino backend for cpu or cuda")


# Message sizes the routing report covers: 8 B to 64 MiB in steps of 8x.
REPORT_SIZES = [8 * 8**k for k in range(8)] + [64 << 20]


def topology(group=None, sizes=None) -> dict:
    """This rank's view of `group` (default: the world) as a plain dict, with the plan the router
    takes for each op at each of `sizes` (bytes; default 8 B to 64 MiB)."""
    group, backend = _domino_backend(group)
    host = backend._host()
    layout = backend._layout()
    return {
        "rank": dist.get_rank(group),
        "world_size": dist.get_world_size(group),
        "layout": layout,
        "host": host,
        "binding": backend._binding(),
        "transports": {"intra_host": backend.intra_transport, "inter_host": backend.inter_transport},
        "routing": backend._routing(list(sizes if sizes is not None else REPORT_SIZES)),
        "default_lane": backend.default_priority,
        # The DOMINO_* settings that change what goes on the wire, as rank 0 has them: every
        # rank of the group uses these (unset ones are absent).
        "settings": backend._wire_settings(),
        # How CUDA tensors travel ("undecided" until the group's first CUDA collective) and the
        # comm streams made so far, with their priorities.
        "cuda": backend._cuda(),
        "reduction_isa": _C.reduction_isa(),
    }


def _print_host(host: dict) -> None:
    print(f"host ({host['source']}): {host['packages']} package(s), {host['cores']} cores, "
          f"{host['processing_units']} processing units")
    for n in host["numa_nodes"]:
        print(f"  NUMA {n['os_index']}: cpus {n['cpus']}, {n['memory_bytes'] / 2**30:.1f} GiB")
    for g in host["gpus"]:
        print(f"  GPU {g['name']} {g['pci_busid']} on NUMA {g['numa']}, closest NIC {g.get('closest_nic', '-')}")
    for n in host["nics"]:
        print(f"  NIC {n['name']} {n['pci_busid']} on NUMA {n['numa']}")


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _print_routing(routing: dict) -> None:
    costs = routing["cost_model"]
    print("cost model: " + ", ".join(
        f"{level} {c['latency_us']:.1f} us + bytes / {c['gbytes_per_s']:.2f} GB/s ({c['source']})"
        for level, c in costs.items()))
    if routing["measured_up_to_bytes"]:
        print(f"all-reduces up to {_size(routing['measured_up_to_bytes'])} across hosts: "
              "plan measured on the group's first calls (DOMINO_LOG=info)")
    print(f"{'op':<15}{'size':>9}  {'plan':<13}{'predicted':>12}  {'steps (op@level:algorithm, xN: pipelined in N chunks)':<82}"
          "alternatives")
    for p in routing["plans"]:
        others = ", ".join(f"{k} {v:.0f} us" for k, v in p["alternatives_us"].items() if k != p["plan"])
        print(f"{p['op']:<15}{_size(p['bytes']):>9}  {p['plan'] + ('*' if p['forced'] else ''):<13}"
              f"{p['predicted_us']:>9.1f} us  {p['steps']:<80}  {others}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_domino.topology", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--topo-file", default=os.environ.get("DOMINO_TOPO_FILE", ""),
                        help="an hwloc XML file instead of live detection (default: DOMINO_TOPO_FILE)")
    args = parser.parse_args(argv)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("domino")
        view = topology()
        views = [None] * dist.get_world_size()
        dist.all_gather_object(views, view)
        dist.destroy_process_group()
        if view["rank"] != 0:
            return 0
        if args.json:
            print(json.dumps(views, indent=2))
            return 0
        _print_host(view["host"])
        for h in view["layout"]["hosts"]:
            print(f"host {h['id']}: ranks {h['ranks']}")
        for v in views:
            print(f"  rank {v['rank']}: local rank {v['layout']['local_rank']} of {v['layout']['local_size']}, "
                  f"progress threads on cpus {v['binding']['cpus']}, NUMA {v['binding']['numa']}, NIC {v['binding']['nic']}, "
                  f"intra-host {v['transports']['intra_host']}, inter-host {v['transports']['inter_host']}, "
                  f"UCX network devices {v['binding']['ucx_net_devices'] or 'all'}, "
                  f"default lane {v['default_lane']}")
        _print_routing(view["routing"])
        return 0
    host = _C.host_topology(args.topo_file)
    if args.json:
        print(json.dumps({"host": host, "reduction_isa": _C.reduction_isa()}, indent=2))
    else:
        _print_host(host)
        print(f"reduction kernels: {_C.reduction_isa()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
