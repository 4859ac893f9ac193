#!/usr/bin/env bash
# The compose file of docs/guides/kubernetes.md (an app service, and linkcond attach sharing its network with
# network_mode: "service:app") under podman-compose, taken from the guide so the two cannot drift apart, with the
# test's images, its own control port and a web service added: the app's fetch (the app started with no proxy
# settings) is conditioned, never faster than 3G allows; `linkcond use none` from the host through the published
# control port with the token takes effect; podman-compose down removes every container it started.
#
#   Tests/image/attach-compose.sh   LINKCOND_IMAGE=NAME uses that image; otherwise scripts/package --image builds it
#
# `network_mode: "service:NAME"` needs podman-compose 1.0.6 or later (Debian 12's 1.0.3 passes it to podman as
# it is, which refuses it): PODMAN_COMPOSE names one, else podman-compose on PATH when it is that recent, else
# podman-compose 1.0.6 from PyPI in a virtual environment kept in $TMPDIR.
#
# Exit status: 0 passed, 1 failed, 77 skipped (no podman, no podman-compose recent enough and none from PyPI, or
# podman cannot run containers here).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
name=attach-compose
started=$(date +%s)
# shellcheck source=Tests/image/lib.sh
. "$repo/Tests/image/lib.sh"
# Whether podman-compose $1 is 1.0.6 or later: it prints "podman-compose version: X" (1.0.3: "podman-composer
# version  X").
recent_enough() {
    "$1" version 2>/dev/null | python3 -c 'import re, sys
found = re.search(r"podman-compose.? version:? +([0-9.]+)", sys.stdin.read())
sys.exit(0 if found and tuple(map(int, found[1].split("."))) >= (1, 0, 6) else 1)'
}
podman_compose=${PODMAN_COMPOSE:-podman-compose}
if [ -z "${PODMAN_COMPOSE:-}" ] && ! recent_enough podman-compose; then
    venv="${TMPDIR:-/tmp}/linkcond-compose-venv"
    podman_compose="$venv/bin/podman-compose"
    if ! recent_enough "$podman_compose"; then
        { python3 -m venv "$venv" && timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check 'podman-compose==1.0.6'; } \
            || skip "podman-compose 1.0.6 or later is needed for network_mode service:, and pip cannot install it"
    fi
fi
image_prerequisites
image_linkcond
compose_project="linkcond-test-$test_id"
# The sidecar goes first: a container whose network another container joined cannot be removed before it.
trap 'podman ps -aq --filter "label=io.podman.compose.project=$compose_project" --filter "label=com.docker.compose.service=linkcond" | xargs -r podman rm -f -t 0 >/dev/null 2>&1; image_cleanup' EXIT

control_port=$(free_port)
project_dir="$test_work/project"
mkdir -p "$project_dir"
guide_block kubernetes.md "<!-- file compose.yaml" | sed -e "s#image: docker.io/library/alpine:3.20#image: $upstream_image#" \
    -e 's#command: \["sleep", "infinity"\]#command: ["/bin/busybox", "sleep", "3600"]#' \
    -e "s#image: linkcond:latest#image: $linkcond_image#" \
    -e "s#127.0.0.1:7474:7474#127.0.0.1:$control_port:7474#" > "$project_dir/compose.yaml"
for replaced in "$upstream_image" "busybox\", \"sleep" "$linkcond_image" "127.0.0.1:$control_port:7474" 'network_mode: "service:app"'; do
    grep -qF "$replaced" "$project_dir/compose.yaml" || fail "the guide's compose file no longer has what this test uses ($replaced)"
done
# The web service the app fetches from, on the project's network.
printf '  web:\n    image: %s\n' "$upstream_image" >> "$project_dir/compose.yaml"

export LINKCOND_CONTROL_TOKEN
LINKCOND_CONTROL_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
container_of() { podman ps -q --filter "label=io.podman.compose.project=$compose_project" --filter "label=com.docker.compose.service=$1"; }
(cd "$project_dir" && timeout 180 "$podman_compose" -p "$compose_project" -f compose.yaml up -d) > "$test_work/compose.log" 2>&1 \
    || { cat "$test_work/compose.log"; fail "podman-compose up"; }
app=$(container_of app)
sidecar=$(container_of linkcond)
web=$(container_of web)
[ -n "$app" ] && [ -n "$sidecar" ] && [ -n "$web" ] || { cat "$test_work/compose.log"; fail "podman-compose up did not start app, linkcond and web"; }
web_ip=$(podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$web")
ready() { podman logs "$sidecar" 2>&1 | grep -q "^ready control"; }
wait_for 60 ready || { podman logs "$sidecar"; fail "the sidecar printed no ready line within 60 s"; }

# steer ARGUMENTS...: a linkcond command from the host, through the port app publishes, with the token.
steer() {
    timeout 60 podman run --rm --label "linkcond-test=$test_id" --network host -e LINKCOND_CONTROL_TOKEN \
        "$linkcond_image" "$@" --control "http://127.0.0.1:$control_port"
}
status_field() { steer status --json | python3 -c "import json, sys; s = json.load(sys.stdin); print($1)"; }

check "the app container was started with no proxy settings" \
    bash -c "! podman inspect -f '{{range .Config.Env}}{{println .}}{{end}}' '$app' | grep -qi '_proxy='"
check "the app's fetch through the sidecar is conditioned: 100 kB whole, never faster than 3G allows" \
    fetch_page_at_3g "$app" "$web_ip"
check "linkcond use none from the host, through the published control port" steer use none
check "… and the next fetch arrives whole" fetch_page "$app" "$web_ip"
seen=$(status_field "s['profile'] + ' ' + str(s['listeners'][0]['connectionsAccepted'])" || true)
check "… through linkcond, on profile none ($seen)" test "$seen" = "none 2"

(cd "$project_dir" && timeout 120 "$podman_compose" -p "$compose_project" -f compose.yaml down -t 2) >> "$test_work/compose.log" 2>&1 \
    || { cat "$test_work/compose.log"; echo "$name: podman-compose down failed"; }
left=$(podman ps -aq --filter "label=io.podman.compose.project=$compose_project")
check "podman-compose down removed every container it started" test -z "$left"

echo "$name: $passed passed, $failed failed; took $(($(date +%s) - started)) s"
((failed == 0))
