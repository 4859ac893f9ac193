# Sourced by Tests/deb/run.sh and Tests/tarball/run.sh: a fresh minimal Debian without Swift (debootstrap
# --variant=minbase, from the mirror apt is configured with), unpacked from a tarball kept in .build-deb/ so that
# a second run downloads nothing for it. Expects $repo, and a function skip REASON that exits 77.

# Skips unless this machine can make the root and run in it (root, debootstrap, mount and network namespaces,
# a Debian suite and mirror); sets debian_suite and debian_mirror.
debian_root_prerequisites() {
    [ "$(id -u)" -eq 0 ] || skip "debootstrap and chroot need root"
    command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
    unshare --mount --net true 2>/dev/null || skip "cannot create mount and network namespaces here"
    # The suite and mirror apt already uses (deb822 .sources or one-line .list).
    debian_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    debian_mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | grep -E '^(URIs:|deb) ' | grep -Eo 'https?://[^ ]*/debian/?' | grep -v security | head -1 || true)
    [ -n "$debian_suite" ] && [ -n "$debian_mirror" ] || skip "no Debian suite or mirror found in /etc/os-release and /etc/apt/sources.list*"
}

# Unpacks a fresh minimal Debian into a new directory under .build-deb/ and prints its path; $1 names the test
# in messages. The caller removes the directory. Exits 1 when debootstrap fails, 77 (skipped, the reason on
# stderr) when the mirror cannot be reached.
debian_root_create() {
    local name=$1 cache="$repo/.build-deb" tarball root
    tarball="$cache/$debian_suite-minbase.tgz"
    mkdir -p "$cache"
    if [ ! -f "$tarball" ]; then
        echo "$name: downloading a minimal $debian_suite from $debian_mirror" >&2
        debootstrap --variant=minbase --make-tarball="$tarball.part" "$debian_suite" "$cache/tarball-work" "$debian_mirror" \
            > "$cache/debootstrap.log" 2>&1 || { tail -5 "$cache/debootstrap.log" >&2; rm -rf "$cache/tarball-work"
                 echo "$name: skipped: debootstrap could not fetch $debian_suite from $debian_mirror" >&2; exit 77; }
        rm -rf "$cache/tarball-work"
        mv "$tarball.part" "$tarball"
    fi
    root=$(mktemp -d "$cache/root.XXXXXX")
    echo "$name: debootstrap --variant=minbase $debian_suite into $root" >&2
    debootstrap --variant=minbase --unpack-tarball="$tarball" "$debian_suite" "$root" "$debian_mirror" > "$cache/debootstrap.log" 2>&1 \
        || { tail -20 "$cache/debootstrap.log" >&2; rm -rf "$root"; echo "$name: FAILED: debootstrap" >&2; exit 1; }
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    echo "$root"
}

# Installs Debian packages $2… into root $1 with apt (in a private mount namespace, so /proc is unmounted
# whatever happens); the log goes to $repo/.build-deb/apt.log.
debian_root_apt_install() {
    local root=$1; shift
    unshare --mount --fork chroot "$root" /bin/sh -c "mount -t proc proc /proc && apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" > "$repo/.build-deb/apt.log" 2>&1
}
