# Sourced by the Tests/image/ scripts: podman set up for this kind of machine, the linkcond image, a tiny upstream
# image, and clean-up of everything a test made on every exit path. Expects $repo and a test name in $name.
# Everything a test creates carries the label linkcond-test=$test_id, and is removed by image_cleanup.

skip() { echo "$name: skipped: $1"; exit 77; }
fail() { echo "$name: FAILED: $1"; exit 1; }

test_id="$name-$$"
test_work=$(mktemp -d)
podman_service_pid=""
test_images=()

image_cleanup() {
    local status=$?
    [ -n "$podman_service_pid" ] && kill "$podman_service_pid" 2>/dev/null && wait "$podman_service_pid" 2>/dev/null
    if command -v podman >/dev/null; then
        podman ps -aq --filter "label=linkcond-test=$test_id" | xargs -r podman rm -f -t 2 >/dev/null 2>&1
        podman pod ps -q --filter "label=linkcond-test=$test_id" | xargs -r podman pod rm -f >/dev/null 2>&1
        [ -n "${compose_project:-}" ] && podman ps -aq --filter "label=io.podman.compose.project=$compose_project" \
            | xargs -r podman rm -f -t 2 >/dev/null 2>&1
        [ -n "${compose_project:-}" ] && podman network ls -q --filter "label=io.podman.compose.project=$compose_project" \
            | xargs -r podman network rm -f >/dev/null 2>&1
        podman network ls -q --filter "label=linkcond-test=$test_id" | xargs -r podman network rm -f >/dev/null 2>&1
        ((${#test_images[@]})) && podman rmi -f "${test_images[@]}" >/dev/null 2>&1
    fi
    rm -rf "$test_work"
    exit "$status"
}
trap image_cleanup EXIT
trap 'exit 1' INT TERM

# Skips unless podman can run a container here; writes the containers.conf this machine needs (runc; no default
# ulimits, which crun cannot set here) unless CONTAINERS_CONF is set, and builds the upstream image.
image_prerequisites() {
    command -v podman >/dev/null || skip "podman is not installed (apt-get install podman runc)"
    command -v busybox >/dev/null || skip "busybox is not installed (apt-get install busybox-static)"
    ldd "$(command -v busybox)" >/dev/null 2>&1 && skip "busybox is dynamically linked; the upstream image needs busybox-static"
    if [ -z "${CONTAINERS_CONF:-}" ]; then
        printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$test_work/containers.conf"
        export CONTAINERS_CONF="$test_work/containers.conf"
    fi
    # The upstream: busybox's httpd serving a 100 kB file on port 80, FROM scratch (nothing can be pulled).
    mkdir -p "$test_work/upstream/www"
    cp "$(command -v busybox)" "$test_work/upstream/busybox"
    head -c 100000 /dev/urandom > "$test_work/upstream/www/page.bin"
    printf 'FROM scratch\nCOPY busybox /bin/busybox\nCOPY www /www\nCMD ["/bin/busybox", "httpd", "-f", "-p", "80", "-h", "/www"]\n' \
        > "$test_work/upstream/Containerfile"
    upstream_image="localhost/linkcond-test-httpd:$test_id"
    timeout 120 podman build --quiet --pull=never -t "$upstream_image" "$test_work/upstream" > "$test_work/build.log" 2>&1 \
        || { cat "$test_work/build.log"; skip "podman cannot build a FROM scratch image here"; }
    test_images+=("$upstream_image")
    timeout 60 podman run --rm --label "linkcond-test=$test_id" "$upstream_image" /bin/busybox true > "$test_work/run.log" 2>&1 \
        || { cat "$test_work/run.log"; skip "podman cannot run a container here (see above; runc, containers.conf)"; }
}

# Uses $LINKCOND_IMAGE if set (it must exist), else builds linkcond:latest with scripts/package --image.
image_linkcond() {
    linkcond_image=${LINKCOND_IMAGE:-}
    if [ -z "$linkcond_image" ]; then
        "$repo/scripts/package" --image > "$test_work/package.log" 2>&1 || { tail -30 "$test_work/package.log"; fail "scripts/package --image"; }
        linkcond_image=localhost/linkcond:latest
    fi
    podman image exists "$linkcond_image" || fail "image $linkcond_image does not exist"
}

# Waits (at most $2 seconds) until GET $1 answers 200.
wait_for_http() {
    local url=$1 deadline=$(($(date +%s) + $2))
    until python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$url" 2>/dev/null; do
        (($(date +%s) < deadline)) || return 1
        sleep 0.5
    done
}

# Prints the fenced block that follows the line containing MARKER in GUIDE (a file under docs/guides/), as a user
# would save it: guide_block GUIDE MARKER.
guide_block() {
    awk -v marker="$2" 'index($0, marker) { found = 1; next } found && /^```/ { if (inside) exit; inside = 1; next } inside { print }' \
        "$repo/docs/guides/$1"
}

# A TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# check DESCRIPTION COMMAND...: runs one check, counting it in $passed or $failed and saying which.
passed=0 failed=0
check() {
    local description=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $description"; else failed=$((failed + 1)); echo "FAILED: $description"; fi
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds, for at most SECONDS.
wait_for() {
    local deadline=$(($(date +%s) + $1)); shift
    until "$@"; do (($(date +%s) < deadline)) || return 1; sleep 0.2; done
}

# fetch_page CONTAINER ADDRESS: CONTAINER gets the upstream image's page from ADDRESS:80 over HTTP/1.0 with
# busybox nc (busybox's wget crashes in a FROM scratch image without /etc), the body being the last 100 kB;
# prints the seconds it took, fails unless the page arrived whole.
fetch_page() {
    python3 - "$1" "$2" "$(md5sum < "$test_work/upstream/www/page.bin" | cut -d' ' -f1)" <<'PY'
import subprocess, sys, time
start = time.monotonic()
script = (f"printf 'GET /page.bin HTTP/1.0\\r\\n\\r\\n' | /bin/busybox nc -w 30 {sys.argv[2]} 80"
          " | /bin/busybox tail -c 100000 | /bin/busybox md5sum")
result = subprocess.run(["timeout", "60", "podman", "exec", sys.argv[1], "/bin/busybox", "sh", "-c", script],
                        capture_output=True, text=True)
elapsed = time.monotonic() - start
print(f"{elapsed:.3f}")
sys.exit(0 if result.stdout.split(" ")[0] == sys.argv[3] else 1)
PY
}

# fetch_page_at_3g CONTAINER ADDRESS: the page arrives whole and never early for 100 kB under 3G (780 kbit/s,
# 100 ms each way): at least 1.2 s.
fetch_page_at_3g() {
    local seconds
    seconds=$(fetch_page "$1" "$2") || { echo "the fetch failed after $seconds s"; return 1; }
    python3 -c "import sys; t = float(sys.argv[1]); print(f'{t:.2f} s'); sys.exit(0 if t >= 1.2 else 1)" "$seconds"
}

# A virtual environment with the given PyPI packages, kept between runs in $TMPDIR.
python_venv() {
    local venv="${TMPDIR:-/tmp}/linkcond-image-venv"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import toxiproxy, testcontainers' 2>/dev/null; then
        python3 -m venv "$venv" || skip "python3 -m venv is not available"
        timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check 'toxiproxy-python==0.1.1' 'testcontainers==4.8.2' \
            || skip "pip cannot install toxiproxy-python and testcontainers from PyPI"
    fi
    echo "$venv/bin/python"
}
