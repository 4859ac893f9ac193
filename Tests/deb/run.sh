#!/usr/bin/env bash
# Installs the .deb that scripts/package builds into a minimal Debian system without Swift (debootstrap
# --variant=minbase into .build-deb/, from the mirror apt is configured with), and there runs `linkcond
# --version`, `linkcond profiles`, the control endpoint's /version and a short transfer through linkcond's
# proxy under 3g, in a network namespace of its own so that nothing leaves its loopback.
#
#   Tests/deb/run.sh [--deb FILE]     without --deb it runs scripts/package first
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no debootstrap, no mirror reachable), with the reason.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
skip() { echo "deb: skipped: $1"; exit 77; }
started=$(date +%s)

deb=""
while (($#)); do
    case "$1" in
        --deb) deb=$2; shift 2 ;;
        *) echo "deb: unknown argument \"$1\"" >&2; exit 2 ;;
    esac
done
# shellcheck source=Tests/lib/debian-root.sh
. "$repo/Tests/lib/debian-root.sh"
debian_root_prerequisites

if [ -z "$deb" ]; then
    deb=$("$repo/scripts/package" --output "$repo/.build-deb") || { echo "deb: FAILED: scripts/package"; exit 1; }
fi
[ -f "$deb" ] || { echo "deb: FAILED: $deb does not exist"; exit 1; }
version=$(sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift")

root=$(debian_root_create deb)
trap 'rm -rf "$root"' EXIT

# In the chroot: install the package with apt (which resolves its Depends from the mirror) and busybox for the
# test's web server and client.
cp "$deb" "$root/tmp/"
cp "$repo/Tests/deb/inside.sh" "$root/tmp/inside.sh"
echo "deb: apt-get install ./$(basename "$deb") busybox"
debian_root_apt_install "$root" "/tmp/$(basename "$deb")" busybox \
    || { tail -20 "$repo/.build-deb/apt.log"; echo "deb: FAILED: the package does not install"; exit 1; }

# The checks, in a new network namespace with only loopback: the proxied transfer cannot reach anything else.
status=0
unshare --mount --net --fork chroot "$root" /bin/bash /tmp/inside.sh "$version" || status=$?
echo "deb: took $(($(date +%s) - started)) s"
exit "$status"
