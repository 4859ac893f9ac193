#!/usr/bin/env bash
# Brings up the compose file of docs/guides/containers.md (linkcond in front of a web service, proxies from a
# Toxiproxy config file, LINKCOND_PROFILE=3g) with podman-compose, with the web image and the host ports replaced
# by the test's own, and checks that the service is reached through the conditioned link.
#
#   Tests/image/compose.sh   LINKCOND_IMAGE=NAME uses that image; otherwise scripts/package --image builds it
#
# Exit status: 0 passed, 1 failed, 77 skipped (no podman or podman-compose, no name resolution on podman's
# networks, or podman cannot run containers here), with the reason.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
name=compose
started=$(date +%s)
# shellcheck source=Tests/image/lib.sh
. "$repo/Tests/image/lib.sh"
command -v podman-compose >/dev/null || skip "podman-compose is not installed (apt-get install podman-compose)"
image_prerequisites
if [ "$(podman info --format '{{.Host.NetworkBackend}}')" = cni ] \
    && [ ! -x /usr/lib/cni/dnsname ] && [ ! -x /usr/libexec/cni/dnsname ] && [ ! -x /opt/cni/bin/dnsname ]; then
    skip "podman's CNI networks resolve no service names without the dnsname plugin (apt-get install golang-github-containernetworking-plugin-dnsname)"
fi
image_linkcond

# The two blocks that follow their marker comments in the guide, as a user would save them.
block() { guide_block containers.md "$1"; }
api_port=$(free_port)
proxy_port=$(free_port)
project_dir="$test_work/project"
mkdir -p "$project_dir"
block "<!-- file compose.yaml" | sed -e "s#image: docker.io/library/nginx:1.27-alpine#image: $upstream_image#" \
    -e "s#image: linkcond:latest#image: ${LINKCOND_IMAGE:-localhost/linkcond:latest}#" \
    -e "s#127.0.0.1:8474:8474#127.0.0.1:$api_port:8474#" -e "s#127.0.0.1:8666:8666#127.0.0.1:$proxy_port:8666#" \
    > "$project_dir/compose.yaml"
block "<!-- file toxiproxy.json" > "$project_dir/toxiproxy.json"
grep -q "$upstream_image" "$project_dir/compose.yaml" && grep -q "$api_port" "$project_dir/compose.yaml" \
    || fail "the guide's compose block no longer has the web image or the ports this test replaces"
chmod 644 "$project_dir/toxiproxy.json"
compose_project="linkcond-test-$test_id"

(cd "$project_dir" && timeout 180 podman-compose -p "$compose_project" -f compose.yaml up -d) > "$test_work/compose.log" 2>&1 \
    || { cat "$test_work/compose.log"; fail "podman-compose up"; }
linkcond_container=$(podman ps -q --filter "label=io.podman.compose.project=$compose_project" --filter "label=io.podman.compose.service=linkcond")
wait_for_http "http://127.0.0.1:$api_port/version" 30 \
    || { podman logs "$linkcond_container"; fail "linkcond's API did not answer within 30 s"; }
check "the config file's proxy exists: GET /proxies/web names upstream web:80" \
    bash -c "python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' http://127.0.0.1:$api_port/proxies/web | grep -q '\"upstream\": *\"web:80\"'"
check "web is reached through linkcond under LINKCOND_PROFILE=3g: 100 kB byte-exact and never early (>= 1.2 s)" \
    bash -c "python3 -c 'import urllib.request,sys,time; t=time.monotonic(); b=urllib.request.urlopen(sys.argv[1], timeout=60).read(); e=time.monotonic()-t; assert b==open(sys.argv[2],\"rb\").read(), \"bytes differ\"; assert e>=1.2, f\"{e:.3f} s: early for 100 kB under 3g\"; print(f\"{e:.2f} s\")' http://127.0.0.1:$proxy_port/page.bin '$test_work/upstream/www/page.bin'"
(cd "$project_dir" && timeout 120 podman-compose -p "$compose_project" -f compose.yaml down) >> "$test_work/compose.log" 2>&1 \
    || { cat "$test_work/compose.log"; echo "$name: podman-compose down failed; the clean-up removes what is left"; }

echo "$name: $passed passed, $failed failed; took $(($(date +%s) - started)) s"
((failed == 0))
