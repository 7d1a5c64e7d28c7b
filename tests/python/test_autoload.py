"""`import torch` alone registers "domino" (the package's `torch.backends` entry point), loads
nothing else of torch-domino until a group is made, honours TORCH_DEVICE_BACKEND_AUTOLOAD=0, and
never breaks `import torch`. Each case runs fresh interpreters that never import torch_domino."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

RANK_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.distributed as dist
    loaded_at_import = "torch_domino" in sys.modules
    rank, world, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("domino", init_method="file://" + store, rank=rank, world_size=world)
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.all(t == world * (world + 1) / 2), t[:4]
    assert type(dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))).__name__ == "ProcessGroupDomino"
    print("OK", loaded_at_import, dist.get_backend(), flush=True)
    dist.destroy_process_group()
""")


def run_ranks(tmp_path, world: int, env: dict) -> list[subprocess.CompletedProcess]:
    store = str(tmp_path / "store")
    procs = [subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, str(r), str(world), store],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env.update(extra)
    return env


def test_import_torch_alone_registers_domino_and_loads_it_at_the_first_group(tmp_path):
    for r, result in enumerate(run_ranks(tmp_path, 2, clean_env())):
        assert result.returncode == 0, f"rank {r}: {result.stderr[-2000:]}"
        # The backend's package was not imported by `import torch`: only its registration was.
        assert result.stdout.split() == ["OK", "False", "domino"], result.stdout


def test_autoload_off_leaves_domino_unknown(tmp_path):
    results = run_ranks(tmp_path, 1, clean_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert results[0].returncode != 0
    assert "Unknown backend type domino" in results[0].stderr, results[0].stderr[-2000:]


def test_a_failed_registration_warns_and_import_torch_goes_on():
    script = textwrap.dedent("""
        import warnings
        import torch
        import torch.distributed as dist
        import torch_domino_autoload

        def refuse(*args, **kwargs):
            raise RuntimeError("registration refused for the test")

        dist.Backend.register_backend = refuse
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch_domino_autoload.register()
        assert any("registration refused for the test" in str(w.message) and
                   w.category is RuntimeWarning for w in caught), [str(w.message) for w in caught]
        try:
            torch_domino_autoload.register(strict=True)
        except RuntimeError as e:
            assert "registration refused" in str(e)
        else:
            raise AssertionError("strict registration did not raise")
        print("OK")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, env=clean_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "OK"


def test_the_entry_point_is_installed_under_torch_backends():
    from importlib.metadata import entry_points

    values = [e.value for e in entry_points(group="torch.backends") if e.name == "domino"]
    assert values == ["torch_domino_autoload:register"]


@pytest.mark.parametrize("first", ["torch_domino", "torch"])
def test_importing_the_package_after_autoload_or_alone_registers_once(first):
    script = f"import {first}\nimport torch_domino, torch.distributed as dist\n" \
             "assert 'DOMINO' in dist.Backend._plugins\nprint('OK')"
    for autoload in ("0", "1"):
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=120, env=clean_env(TORCH_DEVICE_BACKEND_AUTOLOAD=autoload))
        assert result.returncode == 0 and result.stdout.strip() == "OK", result.stderr[-2000:]
