#!/usr/bin/env bash
# The device checks, as one script for a machine with a GPU: builds the project there, then runs
# every GPU test. Without a GPU it says so and exits 0. Meant to finish in a few minutes.
#
#   bash tests/gpu/run.sh
#
# Covered today: the Domino layers' numerics on the device (TP=1, and 2 ranks sharing the GPU
# over the domino backend, which stages CUDA tensors through host memory), and the backend's
# CUDA device map. Not yet (issue 5): NCCL transport, per-lane comm streams at device
# priorities, event-based waits; their checks join this script when they exist.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
cd "$ROOT"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU on this machine: nothing to check"
  exit 0
fi
nvidia-smi -L
bash "$ROOT/scripts/setup.sh" || exit 1
"$VENV/bin/python" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
"$VENV/bin/python" -m pytest -p no:cacheprovider -q -rs \
  tests/python/test_gpu_overlap.py tests/python/test_backend_basics.py
