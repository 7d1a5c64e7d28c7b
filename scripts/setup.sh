#!/usr/bin/env bash
# Installs everything torch-domino needs on a fresh Debian machine, then builds and installs it.
# Idempotent: each step checks first, so a second run takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
PYTHON="${PYTHON:-python3}"
START=$(date +%s)

step() { printf '\n==> [setup %3ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git
  libhwloc-dev hwloc libucx-dev ucx-utils
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin iproute2
)

step "Debian packages"
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
else
  echo "all ${#APT_PACKAGES[@]} present"
fi

step "Python environment in $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

step "Pinned Python packages (scripts/requirements.txt)"
REQ="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.torch-domino-requirements"
if [ -f "$STAMP" ] && cmp -s "$REQ" "$STAMP"; then
  echo "already installed: $(grep -v '^#' "$REQ" | tr '\n' ' ')"
else
  echo "torch $(grep '^torch==' "$REQ" | cut -d= -f3) is a CUDA 13 build: about 3 GB of wheels"
  echo "(torch ~0.9 GB, cuDNN, cuBLAS, NCCL, ...). pip prints each file and its size as it goes."
  "$VENV/bin/python" -m pip install --progress-bar on -r "$REQ" 2>&1 | grep -v "Requirement already satisfied"
  cp "$REQ" "$STAMP"
fi

step "Build and install torch-domino (CMake via scikit-build-core, ccache)"
export CCACHE_BASEDIR="$ROOT"  # clones in other folders share the cache
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export PATH="$VENV/bin:$PATH"
# Everything the build compiles, the GoogleTest programs and test plugins included. New files
# count too (git add -N is not needed).
BUILT=(CMakeLists.txt cmake backend plugins topology overlap python pyproject.toml bench/CMakeLists.txt tests/cpp tests/plugins)
SOURCE_HASH=$(cd "$ROOT" && git ls-files -s -- "${BUILT[@]}" 2>/dev/null | sha1sum | cut -d' ' -f1)
DIRTY_HASH=$(cd "$ROOT" && { git diff HEAD -- "${BUILT[@]}"; git ls-files -z --others --exclude-standard -- "${BUILT[@]}" | xargs -0 -r sha1sum -- || true; } 2>/dev/null | sha1sum | cut -d' ' -f1)
BUILD_STAMP="$ROOT/build/python/.installed-${SOURCE_HASH}-${DIRTY_HASH}"
INSTALLED_FROM=$("$VENV/bin/python" -c "import torch_domino, pathlib; print(pathlib.Path(torch_domino.__file__).with_name('.source').read_text())" 2>/dev/null || true)
if [ -f "$BUILD_STAMP" ] && [ "$INSTALLED_FROM" = "$ROOT:$SOURCE_HASH-$DIRTY_HASH" ]; then
  echo "up to date (sources unchanged since the last install from $ROOT)"
else
  mkdir -p "$ROOT/build"
  pip_status=0
  "$VENV/bin/python" -m pip install --no-build-isolation --no-deps \
    --config-settings=build.verbose=true "$ROOT" > "$ROOT/build/pip-install.log" 2>&1 || pip_status=$?
  grep -E "^\[[0-9]+/[0-9]+\]|error|Error|warning:|Successfully" "$ROOT/build/pip-install.log" || true
  if [ $pip_status -ne 0 ]; then
    echo "the build failed (pip exit $pip_status); whole log: $ROOT/build/pip-install.log" >&2
    exit 1
  fi
  "$VENV/bin/python" -c "import torch_domino" || { echo "torch_domino failed to import after install" >&2; exit 1; }
  site=$("$VENV/bin/python" -c "import torch_domino, os; print(os.path.dirname(torch_domino.__file__))")
  printf '%s' "$ROOT:$SOURCE_HASH-$DIRTY_HASH" > "$site/.source"
  rm -f "$ROOT"/build/python/.installed-*
  touch "$BUILD_STAMP"
fi
step "done: $VENV/bin/python has torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') and torch_domino"
