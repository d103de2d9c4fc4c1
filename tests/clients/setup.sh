#!/usr/bin/env bash
# Creates .clients-venv/ at the repository root with the pinned real clients
# (tests/clients/requirements.txt) that tests/tests/clients.rs drives. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$ROOT/.clients-venv"
PY="${PYTHON:-python3}"
if [[ ! -x $VENV/bin/python ]]; then
  "$PY" -m venv "$VENV" || {
    echo "cannot create $VENV: install python3-venv (apt-get install python3-venv)" >&2
    exit 1
  }
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/clients/requirements.txt"
echo "clients installed in $VENV"
