#!/usr/bin/env bash
# The linkcond image as a replacement for Toxiproxy's, with podman: started with no arguments it serves
# Toxiproxy's API, and Toxiproxy's Python client drives it through a published 127.0.0.1 port (a proxy to an
# upstream container on the test's podman network, a latency toxic, disable/enable, reset); it prints its warning
# at start; `podman exec C linkcond use edge` steers it; LINKCOND_CONTROL_TOKEN opens the control endpoint on
# 7474 with that token; `run …` and `exec …` pass through to the CLI; Testcontainers for Python starts it through podman's
# Docker-compatible socket, creates a proxy, adds a toxic and stops it.
#
#   Tests/image/run.sh       LINKCOND_IMAGE=NAME uses that image; otherwise scripts/package --image builds it
#
# Traffic stays on loopback and the test's own podman network. Every wait is bounded. Containers, networks,
# the upstream image and the podman service are removed on every exit path.
# Exit status: 0 passed, 1 failed, 77 skipped (no podman, or podman cannot run containers here), with the reason.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
name=image
started=$(date +%s)
# shellcheck source=Tests/image/lib.sh
. "$repo/Tests/image/lib.sh"
image_prerequisites
image_linkcond
python=$(python_venv)
label="linkcond-test=$test_id"
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
    local description=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $description"; else failed=$((failed + 1)); echo "FAILED: $description"; fi
}
published() { podman port "$1" "$2" | head -1 | sed 's/.*://'; }

network="linkcond-test-$test_id"
podman network create --label "$label" "$network" >/dev/null
podman run -d --label "$label" --name "$test_id-upstream" --network "$network" "$upstream_image" >/dev/null
upstream_ip=$(podman inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$test_id-upstream")
[ -n "$upstream_ip" ] || fail "the upstream container has no address on $network"

# The default command, published on loopback only.
container="$test_id-linkcond"
podman run -d --label "$label" --name "$container" --network "$network" \
    -p 127.0.0.1::8474 -p 127.0.0.1::8666 "$linkcond_image" >/dev/null
api="127.0.0.1:$(published "$container" 8474)"
wait_for_http "http://$api/version" 30 || { podman logs "$container"; fail "GET http://$api/version did not answer within 30 s"; }
logs=$(podman logs "$container" 2>&1)
check "the container warns at start that anyone who reaches the API can make it connect anywhere" \
    grep -q "asks no token: anyone who reaches it" <<<"$logs"
check "the container serves Toxiproxy's API on 0.0.0.0:8474" grep -q "ready toxiproxy http://0.0.0.0:8474" <<<"$logs"
check "GET /version through the published loopback port answers Toxiproxy's version" \
    bash -c "python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' http://$api/version | grep -q '\"version\"'"

echo "$name: Toxiproxy's Python client against the container"
check "toxiproxy-python: proxy, latency toxic, disable/enable, reset" \
    env LINKCOND_API="$api" LINKCOND_PROXY="127.0.0.1:$(published "$container" 8666)" LINKCOND_UPSTREAM="$upstream_ip:80" \
    LINKCOND_PAGE="$test_work/upstream/www/page.bin" timeout 300 "$python" -m unittest -v "$repo/Tests/image/test_toxiproxy_image.py"

check "podman exec C linkcond use edge switches the profile beneath the toxics" \
    bash -c "timeout 30 podman exec '$container' linkcond use edge && timeout 30 podman exec '$container' linkcond status --json | grep -q '\"edge\"'"
check "without LINKCOND_CONTROL_TOKEN the control endpoint listens inside the container only (127.0.0.1:7474)" \
    grep -q "ready control http://127.0.0.1:7474" <<<"$logs"
podman rm -f -t 2 "$container" >/dev/null

# LINKCOND_CONTROL_TOKEN and LINKCOND_PROFILE.
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
podman run -d --label "$label" --name "$container-token" -e LINKCOND_CONTROL_TOKEN="$token" -e LINKCOND_PROFILE=3g \
    -p 127.0.0.1::7474 -p 127.0.0.1::8474 "$linkcond_image" >/dev/null
control="127.0.0.1:$(published "$container-token" 7474)"
wait_for_http "http://$(echo 127.0.0.1:"$(published "$container-token" 8474)")/version" 30 \
    || { podman logs "$container-token"; fail "the container with a token did not start within 30 s"; }
status_of() { python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]} if len(sys.argv) > 2 else {})
try:
    print(urllib.request.urlopen(request, timeout=5).status)
except urllib.error.HTTPError as error:
    print(error.code)
PY
}
check "with LINKCOND_CONTROL_TOKEN the control endpoint on 7474 answers a request with the token" \
    test "$(status_of "http://$control/version" "$token")" = 200
check "… and refuses one without it" test "$(status_of "http://$control/version")" = 401
check "LINKCOND_PROFILE=3g is the profile beneath the toxics" \
    bash -c "timeout 30 podman exec '$container-token' linkcond status --json | grep -q '\"3g\"'"
podman rm -f -t 2 "$container-token" >/dev/null

# Pass-through to the CLI.
check "podman run IMAGE --version prints the version" \
    test "$(timeout 60 podman run --rm --label "$label" "$linkcond_image" --version)" = "$(sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift")"
podman run -d --label "$label" --name "$container-run" --network "$network" -p 127.0.0.1::9000 "$linkcond_image" \
    run --profile 3g --listen 0.0.0.0:9000 --upstream "$upstream_ip:80" --allow-remote >/dev/null
relay="127.0.0.1:$(published "$container-run" 9000)"
deadline=$(($(date +%s) + 30))
until podman logs "$container-run" 2>/dev/null | grep -q '^ready tcp'; do
    (($(date +%s) < deadline)) || break
    sleep 0.5
done
check "podman run IMAGE run --profile 3g … passes through to linkcond run and relays under 3g" \
    bash -c "python3 -c 'import urllib.request,sys,time; t=time.monotonic(); b=urllib.request.urlopen(sys.argv[1], timeout=60).read(); e=time.monotonic()-t; assert b==open(sys.argv[2],\"rb\").read(), \"bytes differ\"; assert e>=1.2, f\"{e:.3f} s: early for 100 kB under 3g\"' http://$relay/page.bin '$test_work/upstream/www/page.bin'"
podman rm -f -t 2 "$container-run" >/dev/null

# linkcond exec in the container (proxy mode: no /dev/net/tun there), with the test's busybox mounted in as the
# program: it fetches the page from the upstream container across the link. exec sets the program's namespace's
# sysctls (IP forwarding off), and a container's /proc/sys is read-only unless unmasked, as the guide says.
expected_sum=$(md5sum < "$test_work/upstream/www/page.bin" | cut -d' ' -f1)
exec_output=$(timeout 120 podman run --rm --label "$label" --network "$network" --security-opt unmask=/proc/sys \
    -v "$test_work/upstream/busybox:/bin/busybox:ro" \
    "$linkcond_image" exec --profile 3g -- /bin/busybox sh -c "/bin/busybox wget -q -O - http://$upstream_ip:80/page.bin | /bin/busybox md5sum" \
    2> "$test_work/exec.log") || true
check "podman run IMAGE exec --profile 3g -- PROGRAM runs the program under linkcond exec: the page arrives whole" \
    test "${exec_output%% *}" = "$expected_sum"
[ "${exec_output%% *}" = "$expected_sum" ] || cat "$test_work/exec.log"

# Testcontainers for Python through podman's Docker-compatible socket; its reaper (Ryuk) cannot be pulled.
socket="$test_work/podman.sock"
podman system service --time=0 "unix://$socket" > "$test_work/service.log" 2>&1 &
podman_service_pid=$!
deadline=$(($(date +%s) + 30))
until [ -S "$socket" ]; do
    (($(date +%s) < deadline)) || { cat "$test_work/service.log"; fail "podman system service made no socket within 30 s"; }
    sleep 0.2
done
echo "$name: Testcontainers for Python against podman's socket"
check "Testcontainers starts linkcond:latest (exposed as a Toxiproxy test does, and on loopback), a toxic conditions a connection" \
    env DOCKER_HOST="unix://$socket" TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 LINKCOND_IMAGE="$linkcond_image" \
    LINKCOND_NETWORK="$network" LINKCOND_UPSTREAM="$upstream_ip:80" LINKCOND_PAGE="$test_work/upstream/www/page.bin" \
    LINKCOND_TEST_LABEL="$label" timeout 300 "$python" -m unittest -v "$repo/Tests/image/test_testcontainers.py"

echo "$name: $passed passed, $failed failed; took $(($(date +%s) - started)) s"
((failed == 0))
