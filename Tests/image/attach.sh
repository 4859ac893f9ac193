#!/usr/bin/env bash
# `linkcond attach` in the image, as a sidecar sharing an app container's network namespace, twice: the Pod of
# docs/guides/kubernetes.md run with `podman kube play` (taken from the guide, so the two cannot drift apart),
# and `podman run --network container:APP`. In each, the app container (the test's busybox image, started with
# no proxy settings) fetches a 100 kB page from a web container: under 3g it takes at least what 3G allows;
# `linkcond use none` sent from outside the pod (another container, to the pod's address and the token) lets it
# through linkcond unshaped, `offline` makes it fail; after SIGKILL of the sidecar the rules are gone at once and
# the fetch flows; a restarted sidecar conditions again; after SIGTERM the rules are gone and it exited 0.
#
#   Tests/image/attach.sh   LINKCOND_IMAGE=NAME uses that image; otherwise scripts/package --image builds it
#
# Needs root (nsenter and nft on the host show the namespace's tables). Every wait is bounded; containers, pods,
# the network and the secret are removed on every exit path.
# Exit status: 0 passed, 1 failed, 77 skipped (no podman, no root, or podman cannot run containers here).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
name=attach
started=$(date +%s)
# shellcheck source=Tests/image/lib.sh
. "$repo/Tests/image/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (podman kube play with NET_ADMIN, nsenter to read the pod's nftables)"
command -v nsenter >/dev/null && command -v nft >/dev/null || skip "needs nsenter and nft (apt-get install util-linux nftables)"
image_prerequisites
image_linkcond
label="linkcond-test=$test_id"
secret="$test_id-control"
# The sidecar goes first: a container whose network another container joined cannot be removed before it.
trap 'podman rm -f -t 0 "$test_id-sidecar" >/dev/null 2>&1; podman secret rm "$secret" >/dev/null 2>&1; image_cleanup' EXIT
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
network="linkcond-test-$test_id"
podman network create --label "$label" "$network" >/dev/null
podman run -d --label "$label" --name "$test_id-web" --network "$network" "$upstream_image" >/dev/null
web_ip=$(podman inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$test_id-web")
[ -n "$web_ip" ] || fail "the web container has no address on $network"
fetch() { fetch_page "$1" "$web_ip"; }
at_3g() { fetch_page_at_3g "$1" "$web_ip"; }

# steer ADDRESS ARGUMENTS...: a linkcond command from outside the pod: another container on the network.
steer() {
    local address=$1; shift
    timeout 60 podman run --rm --label "$label" --network "$network" -e LINKCOND_CONTROL_TOKEN="$token" \
        "$linkcond_image" "$@" --control "http://$address:7474"
}
# status_field ADDRESS EXPRESSION: a field of `linkcond status --json`, read by a Python expression on `s`.
status_field() {
    steer "$1" status --json | python3 -c "import json, sys; s = json.load(sys.stdin); print($2)"
}
tables_of() { nsenter -t "$(podman inspect -f '{{.State.Pid}}' "$1")" -n nft list tables; }
has_table() { tables_of "$1" | grep -q "table inet linkcond-attach"; }
no_table() { ! tables_of "$1" | grep -q "linkcond-attach"; }
fails() { ! "$@"; }
ready() { podman logs "$1" 2>&1 | grep -q "^ready control"; }

# conditioned APP SIDECAR ADDRESS: the checks both ways of attaching share.
conditioned() {
    local app=$1 sidecar=$2 address=$3 accepted
    wait_for 60 ready "$sidecar" || { podman logs "$sidecar"; fail "$sidecar printed no ready line within 60 s"; }
    check "[$sidecar] the rules are in the app's namespace (nft list tables)" has_table "$app"
    check "[$sidecar] the app container was started with no proxy settings" \
        bash -c "! podman inspect -f '{{range .Config.Env}}{{println .}}{{end}}' '$app' | grep -qi '_proxy='"
    check "[$sidecar] the app's fetch is conditioned: 100 kB whole, never faster than 3G allows" at_3g "$app"
    accepted=$(status_field "$address" "s['listeners'][0]['connectionsAccepted']" || echo 0)
    check "[$sidecar] linkcond status from outside the pod counts the fetch ($accepted)" test "$accepted" = 1
    check "[$sidecar] linkcond use none from outside the pod" steer "$address" use none
    check "[$sidecar] … and the next fetch arrives whole" fetch "$app"
    accepted=$(status_field "$address" "s['profile'] + ' ' + str(s['listeners'][0]['connectionsAccepted'])" || true)
    check "[$sidecar] … through linkcond, on profile none ($accepted)" test "$accepted" = "none 2"
    check "[$sidecar] linkcond offline from outside the pod" steer "$address" offline
    check "[$sidecar] … makes the app's fetch fail" fails fetch "$app"
    check "[$sidecar] linkcond online" steer "$address" online
    steer "$address" use 3g >/dev/null
    podman kill -s KILL "$sidecar" >/dev/null
    check "[$sidecar] after SIGKILL of the sidecar the rules are gone at once (within 10 s)" wait_for 10 no_table "$app"
    check "[$sidecar] … and the app's fetch flows, unconditioned" fetch "$app"
    podman start "$sidecar" >/dev/null
    wait_for 60 ready "$sidecar" || { podman logs "$sidecar"; fail "the restarted $sidecar printed no ready line"; }
    check "[$sidecar] the restarted sidecar installs its rules again" has_table "$app"
    check "[$sidecar] … and conditions the app's fetch again" at_3g "$app"
    podman stop -t 10 "$sidecar" >/dev/null
    check "[$sidecar] after SIGTERM (podman stop) the rules are gone" no_table "$app"
    check "[$sidecar] … and the sidecar exited 0" test "$(podman inspect -f '{{.State.ExitCode}}' "$sidecar")" = 0
}

# The guide's Pod, with the test's images, its own names and label. podman 4.3 stores a Secret that kube play
# reads in a form its secretKeyRef cannot read back, so the Secret document is replaced by a podman secret of
# the form secretKeyRef reads (a JSON object of base64 values).
guide_block kubernetes.md "<!-- file pod.yaml" > "$test_work/pod-from-guide.yaml"
grep -q "^kind: Secret" "$test_work/pod-from-guide.yaml" || fail "the guide's Pod block has no Secret"
awk 'BEGIN { RS = "---\n" } !/kind: Secret/ { printf "---\n%s", $0 }' "$test_work/pod-from-guide.yaml" \
    | sed -e "s#image: docker.io/library/alpine:3.20#image: $upstream_image#" \
        -e 's#command: \["sleep", "infinity"\]#command: ["/bin/busybox", "sleep", "3600"]#' \
        -e "s#image: linkcond:latest#image: $linkcond_image#" \
        -e "s#name: linkcond-control#name: $secret#" \
        -e "s#^  name: app\$#  name: $test_id\n  labels:\n    linkcond-test: $test_id#" > "$test_work/pod.yaml"
for replaced in "$upstream_image" "busybox\", \"sleep" "$linkcond_image" "name: $secret" "name: $test_id"; do
    grep -qF "$replaced" "$test_work/pod.yaml" || fail "the guide's Pod no longer has what this test replaces ($replaced)"
done
printf '{"token":"%s"}' "$(printf %s "$token" | base64 -w0)" | podman secret create "$secret" - >/dev/null
timeout 180 podman kube play --network "$network" "$test_work/pod.yaml" > "$test_work/play.log" 2>&1 \
    || { cat "$test_work/play.log"; fail "podman kube play of the guide's Pod"; }
pod_ip=$(podman inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" \
    "$(podman pod inspect -f '{{.InfraContainerID}}' "$test_id")")
echo "$name: the guide's Pod under podman kube play (pod address $pod_ip)"
conditioned "$test_id-app" "$test_id-linkcond" "$pod_ip"
podman pod rm -f -t 0 "$test_id" >/dev/null

# podman run --network container:APP.
echo "$name: podman run --network container:APP"
podman run -d --label "$label" --name "$test_id-app2" --network "$network" "$upstream_image" /bin/busybox sleep 3600 >/dev/null
app_ip=$(podman inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$test_id-app2")
podman run -d --label "$label" --name "$test_id-sidecar" --network "container:$test_id-app2" --cap-add NET_ADMIN \
    -e LINKCOND_CONTROL_TOKEN="$token" "$linkcond_image" attach --profile 3g --control 0.0.0.0:7474 >/dev/null
conditioned "$test_id-app2" "$test_id-sidecar" "$app_ip"

echo "$name: $passed passed, $failed failed; took $(($(date +%s) - started)) s"
((failed == 0))
