#!/usr/bin/env bash
# End-to-end tests of `hyla serve` with the official openai client (pytest,
# tests/server/). The venv comes from tests/requirements.txt via scripts/setup,
# which `make` runs first. HYLA_BIN and HYLA_DATA_DIR are set by CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [ ! -x .venv/bin/pytest ]; then
  echo "test_server_e2e: .venv/bin/pytest missing; run 'make' (scripts/setup creates .venv)" >&2
  exit 1
fi
# Under ASan/UBSan (make asan) the binary is several times slower and ASan's
# quarantine makes RSS grow by design: the heavy tests use less work (see conftest.SANITIZED)
# and skips its RSS check.
bin=${HYLA_BIN:-build/hyla}
if grep -q __asan_init "$bin" 2>/dev/null; then export HYLA_E2E_SANITIZED=1; fi
exec .venv/bin/pytest -q -p no:cacheprovider tests/server
