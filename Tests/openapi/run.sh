#!/usr/bin/env bash
# Runs schemathesis (from PyPI) against a live `linkcond run` with docs/reference/control-api.yaml: every operation
# with generated bodies, parameters and methods, for a bounded number of examples. It fails on a 5xx, on an answer
# the document does not describe (status, content type, JSON schema), and when linkcond did not survive the run
# (it must still be running and answer GET /status).
#
#   Tests/openapi/run.sh                   LINKCOND=path/to/linkcond (default .build/debug/linkcond)
#   OPENAPI_MAX_EXAMPLES=N                 examples per operation (default 1000: about a minute on a loaded 2-core machine)
#   OPENAPI_SEED=N                         repeat a run (schemathesis prints the seed it used)
#
# Exits 77 when PyPI cannot be reached to install schemathesis. The virtual environment is kept under /tmp (or
# SCHEMATHESIS_VENV) between runs, as Tests/toxiproxy/run.sh keeps its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
linkcond="${LINKCOND:-$repo/.build/debug/linkcond}"
[ -x "$linkcond" ] || swift build --product linkcond
version=4.32.5
venv="${SCHEMATHESIS_VENV:-${TMPDIR:-/tmp}/linkcond-schemathesis-venv}"
examples="${OPENAPI_MAX_EXAMPLES:-1000}"

work=$(mktemp -d)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $version\$"; then
    if ! python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/schemathesis/", timeout=15)' 2>/dev/null; then
        echo "openapi: skipped: PyPI (https://pypi.org) cannot be reached to install schemathesis $version" >&2
        exit 77
    fi
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi
python="$venv/bin/python"

# A loopback echo server as the relay's upstream, so the data path is a real one.
cat >"$work/echo.py" <<'EOF'
import socket, socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(65536):
            self.request.sendall(data)
server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
EOF
"$python" -u "$work/echo.py" >"$work/echo.port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/echo.port" ] && break; sleep 0.1; done
echo_port=$(head -1 "$work/echo.port")

token=$("$python" -c 'import secrets; print(secrets.token_hex(32))')
mkfifo "$work/ready"
LINKCOND_CONTROL_TOKEN=$token "$linkcond" run --listen 127.0.0.1:0 --upstream "127.0.0.1:$echo_port" \
    --control 127.0.0.1:0 >"$work/ready" 2>"$work/linkcond.log" &
linkcond_pid=$!
pids+=("$linkcond_pid")
control=""
listen=""
exec 3<"$work/ready"
while read -r -t 30 word kind address _ <&3; do
    [ "$word" = ready ] || continue
    case "$kind" in
        control) control=$address; break ;;
        tcp) listen=$address ;;
    esac
done
[ -n "$control" ] || { echo "openapi: linkcond printed no ready control line; its stderr:" >&2; cat "$work/linkcond.log" >&2; exit 1; }
cat <&3 >/dev/null &
pids+=($!)
echo "openapi: linkcond $control relaying $listen to the echo server on $echo_port"

# In the background, so that a signal runs the trap at once and the trap stops schemathesis too.
status=0
(
    cd "$work"
    seed=()
    [ -z "${OPENAPI_SEED:-}" ] || seed=(--seed "$OPENAPI_SEED")
    exec "$venv/bin/schemathesis" run "$repo/docs/reference/control-api.yaml" --url "$control" \
        --header "Authorization: Bearer $token" --max-examples "$examples" --workers 2 \
        --checks all --exclude-checks positive_data_acceptance,use_after_free,ensure_resource_availability \
        --generation-database none --no-color --suppress-health-check all "${seed[@]}"
) &
pids+=($!)
wait "$!" || status=$?

# linkcond survived: still running, answering /status, taking changes, and relaying once set back to no conditions
# (schemathesis may have left it offline, in a scenario, or in a profile that drops everything).
survived=$("$python" - "$control" "$token" "$listen" <<'EOF' || true
import socket, sys, urllib.request
control, token, listen = sys.argv[1:]
def call(method, path, body=None):
    headers = {"Authorization": "Bearer " + token, "Content-Type": "text/x-linkcond"}
    request = urllib.request.Request(control + path, method=method, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200, (method, path, answer.status)
call("GET", "/status")
call("DELETE", "/scenario")
call("PUT", "/profile", b"none")
call("POST", "/online")
host, port = listen.rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as relayed:
    relayed.sendall(b"ping")
    assert relayed.recv(4) == b"ping"
print("yes")
EOF
)
if ! kill -0 "$linkcond_pid" 2>/dev/null || [ "$survived" != yes ]; then
    echo "openapi: linkcond did not survive the run (running, answering /status, relaying); its stderr:" >&2
    tail -50 "$work/linkcond.log" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "openapi: schemathesis found answers outside docs/reference/control-api.yaml (status $status)" >&2
    exit "$status"
fi
echo "openapi: schemathesis ran clean; linkcond still answers and relays"
