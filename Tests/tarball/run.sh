#!/usr/bin/env bash
# Unpacks the tarball that `scripts/package --tarball` builds into ~/.local of a minimal Debian without Swift (the
# debootstrapped system Tests/deb/run.sh uses, see Tests/lib/debian-root.sh) as its README says, and there runs
# `linkcond --version`, a transfer through linkcond's proxy under 3g and `linkcond exec`, in a network namespace
# of its own so that nothing leaves its loopback. The system gets busybox (the test's web server and client)
# and, for `linkcond exec`, iproute2 and nftables; nothing linkcond itself links.
#
#   Tests/tarball/run.sh [--tarball FILE]    without --tarball it runs scripts/package --tarball first
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no debootstrap, no mirror reachable), with the reason.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
skip() { echo "tarball: skipped: $1"; exit 77; }
started=$(date +%s)

tarball=""
while (($#)); do
    case "$1" in
        --tarball) tarball=$2; shift 2 ;;
        *) echo "tarball: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
done
# shellcheck source=Tests/lib/debian-root.sh
. "$repo/Tests/lib/debian-root.sh"
debian_root_prerequisites

if [ -z "$tarball" ]; then
    tarball=$("$repo/scripts/package" --tarball | tail -1) || { echo "tarball: FAILED: scripts/package --tarball"; exit 1; }
fi
[ -f "$tarball" ] || { echo "tarball: FAILED: $tarball does not exist"; exit 1; }
version=$(sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift")

root=$(debian_root_create tarball)
trap 'rm -rf "$root"' EXIT
echo "tarball: apt-get install busybox iproute2 nftables"
debian_root_apt_install "$root" busybox iproute2 nftables \
    || { tail -20 "$repo/.build-deb/apt.log"; echo "tarball: FAILED: apt-get install"; exit 1; }
cp "$tarball" "$root/tmp/linkcond.tar.gz"
cp "$repo/Tests/tarball/inside.sh" "$root/tmp/inside.sh"

# The checks, in a new network namespace with only loopback: the proxied transfer cannot reach anything else.
# The root is bind-mounted on itself first so that / is a mount point inside, as on a booted system or in a
# container: linkcond exec makes / private before it bind-mounts its resolv.conf, which fails (EINVAL) on a
# directory that is not a mount point.
status=0
unshare --mount --net --fork /bin/sh -c 'mount --bind "$1" "$1" && exec chroot "$1" /bin/bash /tmp/inside.sh "$2"' \
    sh "$root" "$version" || status=$?
echo "tarball: took $(($(date +%s) - started)) s"
exit "$status"
