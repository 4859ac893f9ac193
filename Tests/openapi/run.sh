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
# SCHEMATHESIS_VENV) between runs, as Tests/toxiproxy/run.sh keeps its own. Tests/openapi/lib.sh holds what this
# script shares with Tests/openapi/toxiproxy.sh.
set -euo pipefail
name=openapi
source "$(dirname "$0")/lib.sh"

# A loopback echo server as the relay's upstream, so the data path is a real one.
openapi_start_echo

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

openapi_schemathesis "$repo/docs/reference/control-api.yaml" "$control" --header "Authorization: Bearer $token" \
    --checks all --exclude-checks positive_data_acceptance,use_after_free,ensure_resource_availability

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
