#!/usr/bin/env bash
# Installs the bench-only peers of bench/peers/dtype_bench.py into their own folder,
# DOMINO_BENCH_PEERS (default /opt/torch-domino-peers), which only that bench puts on its ranks'
# PYTHONPATH or loads from. Idempotent. Nothing of them enters the project's environment,
# library or install.
# - DeepSpeed and what it needs beyond the project's environment;
# - oneCCL: the oneccl-devel wheel's headers and CPU-only static library, linked with
#   oneccl_peer.cpp into $PEERS/oneccl/liboneccl_peer.so against Debian's hwloc and libfabric.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/peers"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
PEERS="${DOMINO_BENCH_PEERS:-/opt/torch-domino-peers}"
REQ="$HERE/requirements.txt"
STAMP="$(cat "$REQ" "$HERE/oneccl_peer.cpp" "$HERE/oneccl_link_glue.c" "$HERE/setup.sh" | sha256sum | cut -c1-16)"
if [ -f "$PEERS/.stamp" ] && [ "$(cat "$PEERS/.stamp")" = "$STAMP" ]; then
  echo "bench peers up to date in $PEERS"
  exit 0
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
missing=()
for pkg in libfabric1 libhwloc-dev g++; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
"$VENV/bin/python" -m pip install -q --target "$PEERS" --no-deps --upgrade -r "$REQ"
# oneccl-devel requires the oneccl runtime wheel, which requires SYCL and a libfabric that PyPI
# does not have; its CPU-only static library needs neither.
CCL="$PEERS/oneccl_devel-src"
rm -rf "$CCL" && mkdir -p "$CCL"
"$VENV/bin/python" -m pip download -q --no-deps -d "$CCL" "oneccl-devel==2022.2.0"
(cd "$CCL" && "$VENV/bin/python" -m zipfile -e oneccl_devel-*.whl .)
DATA="$(echo "$CCL"/oneccl_devel-*.data/data)"
mkdir -p "$PEERS/oneccl"
gcc -O2 -fPIC -Wall -Wextra -Werror -c "$HERE/oneccl_link_glue.c" -o "$CCL/glue.o"
g++ -O2 -std=c++17 -shared -fPIC -Wall -Wextra -Werror -I"$DATA/include" \
  "$HERE/oneccl_peer.cpp" "$CCL/glue.o" "$DATA/lib/ccl/cpu/lib/libccl.a" \
  -lhwloc -ldl -lpthread -Wl,--no-undefined -o "$PEERS/oneccl/liboneccl_peer.so"
# Only the built peer is kept: the wheel's static libraries are 200 MB.
rm -rf "$CCL"
echo "$STAMP" > "$PEERS/.stamp"
echo "bench peers installed in $PEERS"
