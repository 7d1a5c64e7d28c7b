#!/usr/bin/env bash
# The whole test suite: set-up (seconds when nothing is missing), GoogleTest through CTest,
# pytest, then a check that no shared memory was left behind. Extra arguments go to pytest.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TORCH_DOMINO_VENV:-/opt/torch-domino-venv}"
cd "$ROOT"

bash "$ROOT/scripts/setup.sh" || exit 1
export PATH="$VENV/bin:$PATH"

shm_before=$(ls /dev/shm 2>/dev/null | sort)
status=0

printf '\n==> GoogleTest (ctest)\n'
ctest --test-dir "$ROOT/build/python" --output-on-failure --timeout 300 || status=1

printf '\n==> pytest\n'
python -m pytest -p no:cacheprovider -q -rs tests/python "$@" || status=1

printf '\n==> /dev/shm hygiene\n'
shm_after=$(ls /dev/shm 2>/dev/null | sort)
left=$(comm -13 <(echo "$shm_before") <(echo "$shm_after"))
if [ -n "$left" ]; then
  echo "the suite left shared memory behind:"; echo "$left"; status=1
else
  echo "clean: nothing new in /dev/shm"
fi
exit $status
