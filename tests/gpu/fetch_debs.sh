#!/usr/bin/env bash
# For a GPU machine that cannot reach a package registry (it has CUDA, torch and a compiler, but
# not this project's Debian libraries nor its build and test packages): downloads those here,
# into .gpu-debs/ (ignored by git; pass it in the device tool's carry), so they travel with the
# working tree. tests/gpu/run.sh unpacks the Debian packages when the machine lacks the
# libraries, and installs the wheels its python3 lacks. About 25 MB.
#
#   bash tests/gpu/fetch_debs.sh            # wheels for the GPU machine's Python 3.12
#   GPU_PYTHON_VERSION=3.11 bash tests/gpu/fetch_debs.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY_VERSION="${GPU_PYTHON_VERSION:-3.12}"
PIP="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}/bin/pip"
PACKAGES=(
  libhwloc-dev libhwloc15
  libucx-dev libucx0 libibverbs1 librdmacm1 libnuma1
  libgtest-dev
  pkgconf pkgconf-bin libpkgconf3
)
mkdir -p "$ROOT/.gpu-debs"
cd "$ROOT/.gpu-debs"
rm -f ./*.deb
apt-get download "${PACKAGES[@]}"
# The build backend and the test runner at the versions scripts/requirements.txt pins.
pins=$(grep -E '^(scikit-build-core|pytest|numpy|ninja|expecttest)==' "$ROOT/scripts/requirements.txt")
rm -rf wheels
# shellcheck disable=SC2086
"$PIP" download -q -d wheels --only-binary=:all: --python-version "$PY_VERSION" \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any $pins
# Megatron-Core, for the Megatron spec's GPU test: without its dependencies (torch, numpy and
# packaging, which a GPU machine with torch has).
megatron_pin=$(grep -E '^megatron-core==' "$ROOT/scripts/requirements.txt")
"$PIP" download -q -d wheels --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 "$megatron_pin"
# CMake, for a machine without one: the same minor release as this machine's, which builds the
# project in CI (a build tool of the offline machine only, not a dependency of the project).
cmake_series=$(cmake --version | head -1 | awk '{print $3}' | cut -d. -f1,2)
"$PIP" download -q -d wheels --only-binary=:all: --python-version "$PY_VERSION" \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 "cmake~=${cmake_series}.0"
ls -l . wheels
du -sh .
