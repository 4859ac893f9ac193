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
[ "$(id -u)" -eq 0 ] || skip "debootstrap and chroot need root"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
unshare --mount --net true 2>/dev/null || skip "cannot create mount and network namespaces here"

# The suite and mirror apt already uses (deb822 .sources or one-line .list).
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -E '^(URIs:|deb) ' | grep -Eo 'https?://[^ ]*/debian/?' | grep -v security | head -1 || true)
[ -n "$suite" ] && [ -n "$mirror" ] || skip "no Debian suite or mirror found in /etc/os-release and /etc/apt/sources.list*"

if [ -z "$deb" ]; then
    deb=$("$repo/scripts/package" --output "$repo/.build-deb") || { echo "deb: FAILED: scripts/package"; exit 1; }
fi
[ -f "$deb" ] || { echo "deb: FAILED: $deb does not exist"; exit 1; }
version=$(sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift")

# The base system is unpacked fresh each run from a tarball kept in .build-deb/ (ignored by git), so a second
# run downloads nothing for it.
cache="$repo/.build-deb"
tarball="$cache/$suite-minbase.tgz"
mkdir -p "$cache"
if [ ! -f "$tarball" ]; then
    echo "deb: downloading a minimal $suite from $mirror"
    debootstrap --variant=minbase --make-tarball="$tarball.part" "$suite" "$cache/tarball-work" "$mirror" \
        > "$cache/debootstrap.log" 2>&1 || { tail -5 "$cache/debootstrap.log"; rm -rf "$cache/tarball-work"; skip "debootstrap could not fetch $suite from $mirror"; }
    rm -rf "$cache/tarball-work"
    mv "$tarball.part" "$tarball"
fi
root=$(mktemp -d "$cache/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
echo "deb: debootstrap --variant=minbase $suite into $root"
debootstrap --variant=minbase --unpack-tarball="$tarball" "$suite" "$root" "$mirror" > "$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log"; echo "deb: FAILED: debootstrap"; exit 1; }

# In the chroot: install the package with apt (which resolves its Depends from the mirror) and busybox for the
# test's web server and client, inside a private mount namespace so /proc is unmounted whatever happens.
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
cp "$repo/Tests/deb/inside.sh" "$root/tmp/inside.sh"
echo "deb: apt-get install ./$(basename "$deb") busybox"
unshare --mount --fork chroot "$root" /bin/sh -c "mount -t proc proc /proc && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb") busybox" \
    > "$cache/apt.log" 2>&1 || { tail -20 "$cache/apt.log"; echo "deb: FAILED: the package does not install"; exit 1; }

# The checks, in a new network namespace with only loopback: the proxied transfer cannot reach anything else.
status=0
unshare --mount --net --fork chroot "$root" /bin/bash /tmp/inside.sh "$version" || status=$?
echo "deb: took $(($(date +%s) - started)) s"
exit "$status"
