# Shared by Tests/openapi/run.sh (the control API) and Tests/openapi/toxiproxy.sh (the Toxiproxy API): source it
# from the script with `name` set to the prefix of its messages. It sets `repo`, `linkcond`, `venv`, `python`,
# `examples` and `work` (a directory removed at exit), installs schemathesis into a virtual environment kept under
# /tmp (or SCHEMATHESIS_VENV) between runs, exiting 77 when PyPI cannot be reached, and stops every process whose id
# is added to `pids` when the script exits or is interrupted.
#
#   LINKCOND=path/to/linkcond   (default .build/debug/linkcond)
#   OPENAPI_MAX_EXAMPLES=N      examples per operation (default: the script's `default_examples`, else 1000)
#   OPENAPI_SEED=N              repeat a run (schemathesis prints the seed it used)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$PWD
linkcond="${LINKCOND:-$repo/.build/debug/linkcond}"
[ -x "$linkcond" ] || swift build --product linkcond
schemathesis_version=4.32.5
venv="${SCHEMATHESIS_VENV:-${TMPDIR:-/tmp}/linkcond-schemathesis-venv}"
examples="${OPENAPI_MAX_EXAMPLES:-${default_examples:-1000}}"

work=$(mktemp -d)
pids=()
openapi_cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap openapi_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $schemathesis_version\$"; then
    if ! python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/schemathesis/", timeout=15)' 2>/dev/null; then
        echo "$name: skipped: PyPI (https://pypi.org) cannot be reached to install schemathesis $schemathesis_version" >&2
        exit 77
    fi
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$schemathesis_version"
fi
python="$venv/bin/python"

# Starts a loopback echo server, for a real data path, and sets `echo_port`.
openapi_start_echo() {
    cat >"$work/echo.py" <<'PY'
import socket, socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.request.sendall(data)
server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
PY
    "$python" -u "$work/echo.py" >"$work/echo.port" &
    pids+=($!)
    local _
    for _ in $(seq 100); do [ -s "$work/echo.port" ] && break; sleep 0.1; done
    echo_port=$(head -1 "$work/echo.port")
}

# Runs schemathesis on DOCUMENT against URL with the further options given, and sets `status` to its exit status.
# In the background, so that a signal runs the trap at once and the trap stops schemathesis too.
# One worker: with two, hypothesis parses lambda sources with `ast` on two threads at once, and CPython 3.11's
# shared AST recursion counter then fails a run with "AST constructor recursion depth mismatch" (a flaky
# runtime error, not an answer outside the document).
openapi_schemathesis() {
    local document=$1 url=$2
    shift 2
    status=0
    (
        cd "$work"
        seed=()
        [ -z "${OPENAPI_SEED:-}" ] || seed=(--seed "$OPENAPI_SEED")
        exec "$venv/bin/schemathesis" run "$document" --url "$url" --max-examples "$examples" --workers 1 \
            --generation-database none --no-color --suppress-health-check all "${seed[@]}" "$@"
    ) &
    pids+=($!)
    wait "$!" || status=$?
}
