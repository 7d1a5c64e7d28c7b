#!/usr/bin/env bash
# The device checks, as one script for a machine with a GPU: builds the project there, then runs
# every GPU test. Without a GPU it says so and exits 0. Meant to finish in a few minutes.
#
#   bash tests/gpu/run.sh
#
# Checks: the NCCL transport through the plugin ABI (GoogleTest: one-rank all-reduce, split,
# barrier); comm streams at the device's greatest / least priority per lane; Work.wait() that
# makes the caller's stream wait while the host goes on; every op over NCCL at world size 1, and
# host-staged among 2 to 4 processes sharing the GPU; futures with .then and handle scopes; the
# watchdog aborting a stuck NCCL communicator; the Domino layers' numerics on the device (float32,
# and bfloat16 against the float32 reference); the backend's CUDA device map. Then the GPU
# benchmarks (bench/results/collectives_cuda.* and priority_cuda.*).
#
# On a GPU machine that cannot reach a package registry but has CUDA, a compiler and a python3
# with torch (the lent device machines): run `bash tests/gpu/fetch_debs.sh` on a connected
# machine first and bring .gpu-debs/ along; the script then builds against those packages and
# that python3 (GPU_PYTHON overrides) instead of running scripts/setup.sh.
#
#   bash tests/gpu/run.sh --rehearse   # without a GPU: that offline set-up and build, then the
#                                      # tests, which skip; e.g. GPU_PYTHON=/opt/torch-check-2.11.0/bin/python
#   bash tests/gpu/run.sh --no-bench   # the build and the tests only
#   bash tests/gpu/run.sh --bench-only # the benchmarks only, with what an earlier call built and
#                                      # installed on the same machine (the device tool keeps a
#                                      # machine warm for a short while between calls)
#
# The whole log goes to $OUT/gpu-run.log (the device tool's output folder) or build/gpu-run.log.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
cd "$ROOT"
REHEARSE=0 BENCH=1 TESTS=1
case "${1:-}" in
  --rehearse) REHEARSE=1 ;;
  --no-bench) BENCH=0 ;;
  --bench-only) TESTS=0 ;;
  "") ;;
  *) echo "tests/gpu/run.sh: unknown option '$1' (--rehearse, --no-bench or --bench-only)"; exit 2 ;;
esac
LOG_DIR="${OUT:-$ROOT/build}"
mkdir -p "$LOG_DIR"
exec > >(tee "$LOG_DIR/gpu-run.log") 2>&1
TEE_PID=$!
# The log's last lines must reach the file before the script ends.
finish() {
  exec 1>&- 2>&-
  wait "$TEE_PID" 2>/dev/null
  exit "$1"
}

if [ "$REHEARSE" = 1 ]; then
  echo "rehearsal: the offline set-up and build without a GPU; the GPU tests will skip"
  [ -d "$ROOT/.gpu-debs" ] || { echo "no .gpu-debs/ to rehearse with: run tests/gpu/fetch_debs.sh first"; finish 1; }
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU on this machine: nothing to check"
  finish 0
else
  nvidia-smi -L
fi
START=$(date +%s)
if [ "$TESTS" = 0 ]; then
  [ -d "$ROOT/.gpu-debs" ] && source "$ROOT/tests/gpu/offline_env.sh"
  PY="${GPU_PYTHON:-$(command -v python3)}"
  [ -x "$VENV/bin/python" ] && PY="$VENV/bin/python"
  "$PY" -c "import torch_domino" || { echo "--bench-only: torch_domino is not installed for $PY: run without it first"; finish 1; }
elif [ -d "$ROOT/.gpu-debs" ] && { [ "$REHEARSE" = 1 ] || ! { command -v pkg-config >/dev/null && pkg-config --exists hwloc ucx; }; }; then
  echo "offline set-up: Debian packages from .gpu-debs, python3 with its own torch"
  # shellcheck source=tests/gpu/offline_env.sh
  source "$ROOT/tests/gpu/offline_env.sh"
  PY="${GPU_PYTHON:-$(command -v python3)}"
  "$PY" -c "import torch; print('python', '.'.join(map(str, __import__('sys').version_info[:3])), 'torch', torch.__version__)" || finish 1
  # What the build and the tests need and this python lacks, from the wheels brought along.
  need=()
  for module in scikit_build_core:scikit-build-core pytest:pytest numpy:numpy ninja:ninja \
                expecttest:expecttest megatron.core:megatron-core; do
    "$PY" -c "import ${module%%:*}" 2>/dev/null || need+=("${module##*:}")
  done
  command -v cmake >/dev/null || need+=(cmake)
  if ((${#need[@]})); then
    echo "installing from .gpu-debs/wheels: ${need[*]}"
    "$PY" -m pip install -q --no-index --find-links "$ROOT/.gpu-debs/wheels" "${need[@]}" || finish 1
  fi
  export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" PATH="$(dirname "$PY"):$PATH"
  "$PY" -m pip install -q --no-build-isolation --no-deps --config-settings=build-dir=build/gpu "$ROOT" || finish 1
  BUILD_DIR="$ROOT/build/gpu"
else
  bash "$ROOT/scripts/setup.sh" || finish 1
  PY="$VENV/bin/python"
  BUILD_DIR="$ROOT/build/python"
fi
[ "$TESTS" = 1 ] && echo "built and installed in $(( $(date +%s) - START )) s"
if [ "$REHEARSE" = 0 ]; then
  "$PY" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || finish 1
fi
status=0
if [ "$TESTS" = 1 ]; then
  ctest --test-dir "$BUILD_DIR" -R NcclPlugin --output-on-failure --timeout 120 || status=1
  # GPU_TESTS narrows the run to some tests (pytest node ids), for a rerun in a short lease.
  # shellcheck disable=SC2086
  "$PY" -m pytest -p no:cacheprovider -q -rs --durations=15 ${GPU_TESTS:-\
    tests/python/test_gpu_lanes.py tests/python/test_gpu_overlap.py tests/python/test_gpu_megatron.py \
    tests/python/test_backend_basics.py} || status=1
fi
if [ "$REHEARSE" = 0 ] && [ "$BENCH" = 1 ]; then
  # The two GPU benchmarks, in the same call: staged all-reduce bus bandwidth with 2 and 4
  # processes on the GPU against Gloo on the same CUDA tensors, and the 4 KiB high-priority
  # all-reduce's latency alone and under 256 MiB low-priority ones.
  BENCH_OUT="${OUT:-$ROOT/bench/results}"
  # Sized to leave the whole call inside the device's 10 minutes after the build and tests.
  timeout 200 "$PY" -m torch_domino.bench --device cuda --worlds 2 4 --backends domino gloo \
    --ops all_reduce --min-bytes 4K --max-bytes "${GPU_BENCH_MAX_BYTES:-256M}" --seconds-per-size 0.1 --repeats 3 \
    --out "$BENCH_OUT" || status=1
  timeout 100 "$PY" -m torch_domino.bench --suite priority --device cuda --load-bytes 256M \
    --samples 500 --loaded-samples 20 --out "$BENCH_OUT" || status=1
fi
echo "GPU checks finished in $(( $(date +%s) - START )) s with status $status; log: $LOG_DIR/gpu-run.log"
finish $status
