#!/usr/bin/env bash
# Builds torch-domino against another torch release, in an environment of its own, and runs a
# quick part of the suite with it: the GPU machine has torch 2.11, PyPI's newest may be newer than
# the pin. Not part of CI (each version is about 3 GB of wheels).
#
#   bash scripts/check_torch_version.sh 2.11.0
#   bash scripts/check_torch_version.sh 2.15.0 -k all_reduce   # extra arguments go to pytest
#
# The environment is /opt/torch-check-<version> (TORCH_CHECK_VENV overrides); the build goes to
# build/torch-<version>, beside the main one. The other pins come from scripts/requirements.txt.
set -euo pipefail
VERSION="${1:?usage: check_torch_version.sh <torch version> [pytest arguments]}"
shift
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TORCH_CHECK_VENV:-/opt/torch-check-$VERSION}"
BUILD="build/torch-$VERSION"
START=$(date +%s)
step() { printf '\n==> [torch %s, %3ss] %s\n' "$VERSION" "$(( $(date +%s) - START ))" "$*"; }
cd "$ROOT"

step "environment $VENV"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$VERSION')" 2>/dev/null || {
  grep -v -e '^#' -e '^torch==' scripts/requirements.txt > "$VENV/other-pins.txt"
  "$VENV/bin/python" -m pip install -q --progress-bar off "torch==$VERSION" -r "$VENV/other-pins.txt"
}
"$VENV/bin/python" - <<'EOF'
import shutil, subprocess, torch
nvcc = shutil.which("nvcc")
toolkit = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.split("release ")[1].split(",")[0] if nvcc else "none"
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}), toolkit {toolkit}")
if nvcc and torch.version.cuda and torch.version.cuda.split(".")[0] != toolkit.split(".")[0]:
    print("note: torch's CUDA major differs from the toolkit's; the CUDA path builds against the toolkit")
EOF

step "build and install ($BUILD)"
export CCACHE_BASEDIR="$ROOT" PATH="$VENV/bin:$PATH"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
log="$VENV/build.log"
if ! "$VENV/bin/python" -m pip install -v --no-build-isolation --no-deps \
    --config-settings=build-dir="$BUILD" --config-settings=build.verbose=true . >"$log" 2>&1; then
  grep -E "error:|FAILED" "$log" | head -40 || true
  echo "the build against torch $VERSION failed; the whole log is $log" >&2
  exit 1
fi
printf '%s build steps, %s warnings\n' "$(grep -cE '^\s*\[[0-9]+/[0-9]+\]' "$log" || true)" \
  "$(grep -c 'warning:' "$log" || true)"
"$VENV/bin/python" -c "import torch, torch_domino; print('torch_domino imports under torch', torch.__version__)"

step "GoogleTest ($BUILD)"
ctest --test-dir "$BUILD" --timeout 300 -j "$(nproc)" >"$VENV/ctest.log" 2>&1 || {
  tail -30 "$VENV/ctest.log"
  exit 1
}
grep "tests passed" "$VENV/ctest.log"

step "pytest: the backend's surface, contract and layers"
"$VENV/bin/python" -m pytest -p no:cacheprovider -q -x \
  tests/python/test_backend_basics.py tests/python/test_surface.py tests/python/test_c10d_contract.py \
  tests/python/test_overlap.py "$@"
step "torch $VERSION: built, GoogleTest and pytest passed"
