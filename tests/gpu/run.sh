#!/usr/bin/env bash
# The device checks, as one script for a machine with a GPU: builds the project there, then runs
# every GPU test. Without a GPU it says so and exits 0. Meant to finish in a few minutes.
#
#   bash tests/gpu/run.sh
#
# Checks: the NCCL transport through the plugin ABI (GoogleTest: one-rank all-reduce, split,
# barrier); comm streams at the device's greatest / least priority per lane; Work.wait() that
# makes the caller's stream wait while the host goes on; every op over NCCL at world size 1, and
# host-staged among 2 to 4 processes sharing the GPU; the Domino layers' numerics on the device;
# the backend's CUDA device map.
#
# On a GPU machine that cannot reach a package registry but has CUDA, a compiler and a python3
# with torch (the lent device machines): run `bash tests/gpu/fetch_debs.sh` on a connected
# machine first and bring .gpu-debs/ along; the script then builds against those packages and
# that python3 instead of running scripts/setup.sh.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
cd "$ROOT"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU on this machine: nothing to check"
  exit 0
fi
nvidia-smi -L
START=$(date +%s)
if [ -d "$ROOT/.gpu-debs" ] && ! { command -v pkg-config >/dev/null && pkg-config --exists hwloc ucx; }; then
  echo "offline set-up: Debian packages from .gpu-debs, python3 with its own torch"
  # shellcheck source=tests/gpu/offline_env.sh
  source "$ROOT/tests/gpu/offline_env.sh"
  PY="$(command -v python3)"
  export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
  "$PY" -m pip install -q --no-build-isolation --no-deps "$ROOT" || exit 1
else
  bash "$ROOT/scripts/setup.sh" || exit 1
  PY="$VENV/bin/python"
fi
echo "built and installed in $(( $(date +%s) - START )) s"
"$PY" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
status=0
ctest --test-dir "$ROOT/build/python" -R NcclPlugin --output-on-failure --timeout 120 || status=1
"$PY" -m pytest -p no:cacheprovider -q -rs \
  tests/python/test_gpu_lanes.py tests/python/test_gpu_overlap.py tests/python/test_backend_basics.py || status=1
exit $status
