#!/bin/bash
# Runs inside the minimal Debian chroot of Tests/tarball/run.sh, in its own network namespace: installs the
# tarball into ~/.local as the README says and checks that linkcond works there without Swift or libnl.
# $1: expected version.
set -uo pipefail
expected_version=$1
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
    local description=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $description"; else failed=$((failed + 1)); echo "FAILED: $description"; fi
}
mount -t proc proc /proc
busybox ip link set lo up
export HOME=/root PATH="/root/.local/bin:$PATH"

mkdir -p ~/.local
check "tar -xzf linkcond.tar.gz -C ~/.local --strip-components=1 installs it" \
    tar -xzf /tmp/linkcond.tar.gz -C ~/.local --strip-components=1
check "no Swift toolchain or runtime on the system" \
    bash -c '! command -v swift && [ ! -e /opt/swift ] && ! ldconfig -p | grep -qi -e libswift -e libFoundation'
check "linkcond is on PATH at ~/.local/bin/linkcond" test "$(command -v linkcond)" = /root/.local/bin/linkcond
libraries=$(ldd ~/.local/bin/linkcond 2>&1)
check "every library linkcond links is on this system: $(echo "$libraries" | awk '{print $1}' | tr '\n' ' ')" \
    bash -c "! grep -q 'not found' <<<'$libraries'"
check "libnl and the Swift runtime are linked in, not loaded" bash -c "! grep -qi -e libnl -e libswift <<<'$libraries'"
check "linkcond --version prints $expected_version" test "$(linkcond --version)" = "$expected_version"
check "the man page is at ~/.local/share/man/man1/linkcond.1.gz" test -s ~/.local/share/man/man1/linkcond.1.gz
check "the completions are under ~/.local/share" test -s ~/.local/share/bash-completion/completions/linkcond \
    -a -s ~/.local/share/zsh/site-functions/_linkcond -a -s ~/.local/share/fish/vendor_completions.d/linkcond.fish
check "linkcond profile check accepts a shipped profile" linkcond profile check ~/.local/share/linkcond/profiles/3g.profile

mkdir -p /srv/www
head -c 100000 /dev/urandom > /srv/www/page.bin
busybox httpd -p 127.0.0.1:8080 -h /srv/www
exec 3< <(exec linkcond run --profile 3g 2>/tmp/linkcond.log)
proxy_pid=$!
read -r -t 20 _ _ listen <&3
read -r -t 20 _ _ control <&3
check "linkcond run prints its ready lines (proxy $listen, control $control)" test -n "$control"
start=$(date +%s%N)
http_proxy="http://$listen" timeout 60 busybox wget -q -O /tmp/got http://127.0.0.1:8080/page.bin
end=$(date +%s%N)
elapsed_ms=$(((end - start) / 1000000))
check "100 kB through linkcond's HTTP proxy arrive byte-exact" cmp -s /srv/www/page.bin /tmp/got
# 3g: 780 kbit/s down, 100 ms each way; 100 kB need at least 1025 ms of serialisation plus 200 ms of delay.
check "under 3g the transfer is never early: ${elapsed_ms} ms >= 1200 ms" test "$elapsed_ms" -ge 1200
kill -TERM "$proxy_pid"
wait "$proxy_pid"
check "linkcond run exits 0 on SIGTERM" test $? -eq 0
exec 3<&-

# linkcond exec: the program's network is the link; 198.18.0.2 stands for this namespace's loopback.
start=$(date +%s%N)
timeout 120 linkcond exec --profile 3g -- busybox wget -q -O /tmp/exec-got http://198.18.0.2:8080/page.bin 2>/tmp/exec.log
exec_status=$?
end=$(date +%s%N)
elapsed_ms=$(((end - start) / 1000000))
[ "$exec_status" -eq 0 ] || cat /tmp/exec.log
check "linkcond exec runs busybox wget and exits with its status 0 (got $exec_status)" test "$exec_status" -eq 0
check "100 kB fetched under linkcond exec arrive byte-exact" cmp -s /srv/www/page.bin /tmp/exec-got
check "under 3g the exec transfer is never early: ${elapsed_ms} ms >= 1200 ms" test "$elapsed_ms" -ge 1200
timeout 60 linkcond exec --profile none -- sh -c 'exit 3' 2>>/tmp/exec.log
check "linkcond exec exits with the program's status (3)" test $? -eq 3

echo "tarball: $passed passed, $failed failed"
((failed == 0))
