#!/bin/bash
# Runs inside the minimal Debian chroot of Tests/deb/run.sh, in its own network namespace, after the .deb was
# installed: checks that no Swift is there and that linkcond works as a user would use it. $1: expected version.
set -uo pipefail
expected_version=$1
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
    local description=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $description"; else failed=$((failed + 1)); echo "FAILED: $description"; fi
}
mount -t proc proc /proc
busybox ip link set lo up

check "no Swift toolchain or runtime on the system" \
    bash -c '! command -v swift && [ ! -e /opt/swift ] && ! ldconfig -p | grep -qi -e libswift -e libFoundation'
check "linkcond is on PATH at /usr/bin/linkcond" test "$(command -v linkcond)" = /usr/bin/linkcond
check "linkcond --version prints $expected_version" test "$(linkcond --version)" = "$expected_version"
profiles=$(linkcond profiles)
check "linkcond profiles lists 3g, edge and lte" bash -c "grep -q '^3g ' <<<'$profiles' && grep -q '^edge ' <<<'$profiles' && grep -q '^lte ' <<<'$profiles'"
check "linkcond profile check accepts the shipped profiles" linkcond profile check /usr/share/linkcond/profiles/3g.profile
check "the man page is installed" test -s /usr/share/man/man1/linkcond.1.gz
check "the bash completion is installed" test -s /usr/share/bash-completion/completions/linkcond

mkdir -p /srv/www
head -c 100000 /dev/urandom > /srv/www/page.bin
busybox httpd -p 127.0.0.1:8080 -h /srv/www
exec 3< <(exec linkcond run --profile 3g 2>/tmp/linkcond.log)
proxy_pid=$!
read -r -t 20 _ _ listen <&3
read -r -t 20 _ _ control <&3
check "linkcond run prints its ready lines (proxy $listen, control $control)" test -n "$control"
check "the control endpoint refuses a request without its token" \
    bash -c "! busybox wget -q -O- '$control/version' 2>/dev/null"
check "linkcond status --json finds the token and says version $expected_version" \
    bash -c "linkcond status --json --control '$control' | grep -q '\"version\" *: *\"$expected_version\"'"
start=$(date +%s%N)
http_proxy="http://$listen" busybox wget -q -O /tmp/got http://127.0.0.1:8080/page.bin
end=$(date +%s%N)
elapsed_ms=$(((end - start) / 1000000))
check "100 kB through linkcond's HTTP proxy arrive byte-exact" cmp -s /srv/www/page.bin /tmp/got
# 3g: 780 kbit/s down, 100 ms each way; 100 kB need at least 1025 ms of serialisation plus 200 ms of delay.
check "under 3g the transfer is never early: ${elapsed_ms} ms >= 1200 ms" test "$elapsed_ms" -ge 1200
kill -TERM "$proxy_pid"
wait "$proxy_pid"
check "linkcond exits 0 on SIGTERM" test $? -eq 0
exec 3<&-

echo "deb: $passed passed, $failed failed"
((failed == 0))
