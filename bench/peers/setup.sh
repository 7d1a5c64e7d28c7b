#!/usr/bin/env bash
# Installs the bench-only peers of bench/peers/dtype_bench.py (DeepSpeed and what it needs
# beyond the project's environment) into their own folder, DOMINO_BENCH_PEERS (default
# /opt/torch-domino-peers), which only that bench puts on its ranks' PYTHONPATH. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
PEERS="${DOMINO_BENCH_PEERS:-/opt/torch-domino-peers}"
REQ="$ROOT/bench/peers/requirements.txt"
if [ -f "$PEERS/.requirements" ] && cmp -s "$REQ" "$PEERS/.requirements"; then
  echo "bench peers up to date in $PEERS"
  exit 0
fi
"$VENV/bin/python" -m pip install -q --target "$PEERS" --no-deps --upgrade -r "$REQ"
cp "$REQ" "$PEERS/.requirements"
echo "bench peers installed in $PEERS"
