#!/usr/bin/env bash
# Drives `linkcond run --toxiproxy` with Toxiproxy's own Python client (toxiproxy-python from PyPI), installed
# into a throw-away virtual environment, and measures every toxic on real loopback connections.
set -euo pipefail
cd "$(dirname "$0")/../.."
linkcond="${LINKCOND:-$PWD/.build/debug/linkcond}"
[ -x "$linkcond" ] || swift build --product linkcond
venv="${TOXIPROXY_VENV:-${TMPDIR:-/tmp}/linkcond-toxiproxy-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import toxiproxy' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'toxiproxy-python==0.1.1'
fi
LINKCOND="$linkcond" "$venv/bin/python" -m unittest -v Tests/toxiproxy/test_toxiproxy_client.py
