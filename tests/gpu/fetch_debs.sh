#!/usr/bin/env bash
# For a GPU machine that cannot reach a package registry (it has CUDA, torch and a compiler, but
# not this project's Debian libraries): downloads those packages here, into .gpu-debs/ (ignored
# by git), so they can travel with the working tree. tests/gpu/run.sh unpacks them when the
# machine lacks the libraries. About 5 MB.
#
#   bash tests/gpu/fetch_debs.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
ls -l
