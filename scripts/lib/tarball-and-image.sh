# Sourced by scripts/package for --tarball and --image. Expects $repo and scripts/lib/release-files.sh sourced.
#
# The tarball is a prefix (bin/, share/) under one top directory, so `tar -xzf FILE -C ~/.local
# --strip-components=1` (or -C /usr/local) installs it. The image is built FROM scratch out of that tarball: the
# binary, ip and nft for linkcond exec, the shared libraries ldd lists for them and the loader, /etc/passwd with a
# non-root user, /tmp. Nothing is pulled, so it builds offline.

# The tarball's name for this machine's architecture: linux-x86_64, linux-aarch64.
tarball_name() {
    echo "linkcond-$1-linux-$(uname -m)"
}

# Writes $1/linkcond-VERSION-linux-ARCH.tar.gz ($2: the version, $3: the built binary, $4: a directory with the
# man page and generated completions) and prints its path.
write_tarball() {
    local output=$1 version=$2 binary=$3 generated=$4
    local name top work
    name=$(tarball_name "$version")
    work=$(mktemp -d -p "$package_work")
    top="$work/$name"
    install -d "$top/bin" "$top/share/man/man1" "$top/share/bash-completion/completions" \
        "$top/share/zsh/site-functions" "$top/share/fish/vendor_completions.d" "$top/share/linkcond/profiles" \
        "$top/share/doc/linkcond"
    install -m 755 "$binary" "$top/bin/linkcond"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$top/bin/linkcond"
    gzip -9n < "$generated/linkcond.1" > "$top/share/man/man1/linkcond.1.gz"
    install -m 644 "$generated/linkcond" "$top/share/bash-completion/completions/linkcond"
    install -m 644 "$generated/_linkcond" "$top/share/zsh/site-functions/_linkcond"
    install -m 644 "$generated/linkcond.fish" "$top/share/fish/vendor_completions.d/linkcond.fish"
    install -m 644 "$repo"/profiles/*.profile "$repo"/profiles/*.scenario "$top/share/linkcond/profiles/"
    install -m 644 "$repo/packaging/debian/copyright" "$top/share/doc/linkcond/copyright"
    chmod 644 "$top/share/man/man1/linkcond.1.gz"
    mkdir -p "$output"
    # Same bytes for the same sources: files sorted, owned by root, dated at the changelog's release.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$(release_date) 00:00Z" -C "$work" -cf - "$name" \
        | gzip -9n > "$output/$name.tar.gz.part"
    mv "$output/$name.tar.gz.part" "$output/$name.tar.gz"
    echo "$output/$name.tar.gz"
}

# Writes a containers.conf podman needs on machines like CI's (runc, since crun cannot set rlimits or use a
# hybrid cgroup layout there; no default ulimits) into directory $1 and points CONTAINERS_CONF at it, unless
# the caller set CONTAINERS_CONF already. Nothing of it goes into the image.
use_podman_conf() {
    [ -n "${CONTAINERS_CONF:-}" ] && return 0
    printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$1/containers.conf"
    export CONTAINERS_CONF="$1/containers.conf"
}

# Builds the image linkcond:$2 and linkcond:latest from tarball $1 with podman and saves it as
# $3/linkcond-VERSION.oci.tar; prints the archive's path.
build_image() {
    local tarball=$1 version=$2 output=$3
    command -v podman >/dev/null || { echo "package: podman is missing (apt-get install podman runc)" >&2; return 1; }
    local work context root library
    work=$(mktemp -d -p "$package_work")
    use_podman_conf "$work"
    context="$work/context"
    root="$context/root"
    mkdir -p "$root/usr" "$root/tmp" "$root/etc" "$context/home"
    tar -xzf "$tarball" -C "$root/usr" --strip-components=1
    rm -rf "$root/usr/share/bash-completion" "$root/usr/share/zsh" "$root/usr/share/fish"
    # `linkcond exec` runs iproute2's ip and nftables' nft in the program's namespace: this machine's, if it has
    # them (apt-get install iproute2 nftables), else exec in the image says they are missing.
    local tool
    for tool in ip nft; do
        if [ -x "/usr/sbin/$tool" ]; then
            install -D -m 755 "$(readlink -f "/usr/sbin/$tool")" "$root/usr/sbin/$tool"
        else
            echo "package: /usr/sbin/$tool is missing here (apt-get install iproute2 nftables); linkcond exec will not run in the image" >&2
        fi
    done
    # What the binaries need at run time, at the paths they were linked against: each library ldd resolves, and
    # the loader named in the binary (its PT_INTERP), copied as files (not the host's symbolic links).
    while read -r library; do
        install -D -m 755 "$(readlink -f "$library")" "$root$library"
    done < <(for tool in "$root"/usr/bin/linkcond "$root"/usr/sbin/*; do [ -e "$tool" ] && ldd "$tool"; done \
        | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' | sort -u)
    chmod 1777 "$root/tmp"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nlinkcond:x:65532:65532:linkcond:/home/linkcond:/sbin/nologin\n' > "$root/etc/passwd"
    printf 'root:x:0:\nlinkcond:x:65532:\n' > "$root/etc/group"
    printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
    cat > "$context/Containerfile" <<EOF
FROM scratch
COPY root/ /
COPY --chown=65532:65532 home/ /home/linkcond/
ENV PATH=/usr/bin:/usr/sbin LINKCOND_CONTROL=http://127.0.0.1:7474
USER linkcond
WORKDIR /home/linkcond
EXPOSE 8474 7474
LABEL org.opencontainers.image.title="linkcond" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.description="linkcond: Toxiproxy's API on 8474 (no token: anyone who reaches the port can make the container connect anywhere it can reach; publish it to 127.0.0.1 only), linkcond's control endpoint on 7474 with LINKCOND_CONTROL_TOKEN, the profile beneath from LINKCOND_PROFILE"
ENTRYPOINT ["/usr/bin/linkcond", "container-entrypoint"]
CMD ["-host=0.0.0.0"]
EOF
    echo "package: podman build linkcond:$version (FROM scratch, $(du -sh "$root" | cut -f1))" >&2
    local previous built
    previous=$(podman image inspect --format '{{.Id}}' "linkcond:$version" 2>/dev/null || true)
    built=$(podman build --quiet --pull=never --timestamp "$(date -u -d "$(release_date)" +%s)" \
        -t "linkcond:$version" -t linkcond:latest "$context")
    # The image this build replaced has lost its tags: remove it rather than leave it dangling (unless a
    # container still uses it).
    if [ -n "$previous" ] && [ "$previous" != "$built" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
    mkdir -p "$output"
    rm -f "$output/linkcond-$version.oci.tar"
    podman save --quiet --format oci-archive -o "$output/linkcond-$version.oci.tar" "linkcond:$version" >&2
    echo "$output/linkcond-$version.oci.tar"
}

# scripts/package --tarball and/or --image ($2, $3: 1 or 0) into directory $1. --image alone builds the
# tarball too (into $1), since the image is made from it.
package_tarball_and_image() {
    local output=$1 want_image=$3 version binary generated tarball
    mkdir -p "$output"
    output=$(cd "$output" && pwd)
    version=$(source_version)
    package_work=$(mktemp -d)
    trap 'rm -rf "$package_work"' EXIT
    echo "package: building linkcond $version (release, Swift runtime and libnl linked in)" >&2
    binary=$(build_release_binary)
    generated=$(mktemp -d -p "$package_work")
    copy_manual "$generated"
    generate_completions "$binary" "$generated"
    tarball=$(write_tarball "$output" "$version" "$binary" "$generated")
    echo "package: $(basename "$tarball"): $(ldd "$binary" | grep -c '=>') shared libraries (ldd): $(ldd "$binary" | sed -n 's/^[[:space:]]*\([^ ]*\) =>.*/\1/p' | tr '\n' ' ')" >&2
    echo "$tarball"
    if ((want_image)); then build_image "$tarball" "$version" "$output"; fi
}
