# Sourced by scripts/install and scripts/package: builds linkcond for installing and generates the files that
# go with it (shell completions; the man page is committed in docs/reference), so that an install and the .deb
# carry the same things. scripts/generate-docs sources it to regenerate the man page.
# Expects $repo to be the repository's root.

# The version, read from the one place it is written.
source_version() {
    sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift"
}

# The date of packaging/debian/changelog's newest entry, as YYYY-MM-DD: the man page's date, so that
# rebuilding the same version gives the same page.
release_date() {
    local line
    line=$(grep -m1 '^ -- ' "$repo/packaging/debian/changelog")
    date -u -d "${line#*>  }" +%Y-%m-%d
}

# Builds the release binary with the Swift runtime and libnl linked in (it then needs no Swift toolchain and no
# libnl package to run, only glibc and libstdc++) and prints its path. Build output goes to stderr.
# libnl: SwiftPM links what pkg-config's libnl-route-3.0 says, with -L/usr/lib/ARCH first, where the linker would
# take the .so files. So pkg-config is pointed at .pc files of our own whose -L is a directory holding only
# Debian's static libnl-3.a and libnl-route-3.a (from libnl-3-dev and libnl-route-3-dev).
build_release_binary() {
    local static="$repo/.build/static-libnl" library name
    mkdir -p "$static"
    for name in libnl-3.a libnl-route-3.a; do
        library=$(gcc -print-file-name="$name" 2>/dev/null || true)
        [ -f "$library" ] || library=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/$name
        [ -f "$library" ] || { echo "package: $name is missing (apt-get install libnl-3-dev libnl-route-3-dev)" >&2; return 1; }
        ln -sf "$(readlink -f "$library")" "$static/$name"
    done
    printf 'Name: libnl\nDescription: libnl, static\nVersion: 3\nLibs: -L%s -lnl-3 -lpthread -lm\nCflags: -I/usr/include/libnl3\n' \
        "$static" > "$static/libnl-3.0.pc"
    printf 'Name: libnl-route\nDescription: libnl-route, static\nVersion: 3\nRequires: libnl-3.0\nLibs: -L%s -lnl-route-3\nCflags: -I/usr/include/libnl3\n' \
        "$static" > "$static/libnl-route-3.0.pc"
    PKG_CONFIG_PATH="$static" swift build --package-path "$repo" -c release --static-swift-stdlib --product linkcond >&2
    echo "$repo/.build/release/linkcond"
}

# Writes linkcond.1 into $1 with swift-argument-parser's generate-manual plugin (scripts/generate-docs; packaging
# uses the committed docs/reference/linkcond.1). The plugin builds the
# package's products in debug mode (the help text is the same in every mode) and reads the built tool's help.
# generate-manual leaves the blank lines of multi-paragraph discussions in, which mdoc warns about; each
# becomes a paragraph break (.Pp).
generate_manual() {
    local output=$1
    (cd "$repo" && swift package plugin generate-manual --configuration debug --date "$(release_date)" >&2)
    sed 's/^$/.Pp/' "$repo/.build/plugins/GenerateManual/outputs/linkcond/linkcond.1" > "$output/linkcond.1"
}

# Copies the committed man page into directory $1, where packaging collects the files it installs.
copy_manual() {
    install -m 644 "$repo/docs/reference/linkcond.1" "$1/linkcond.1"
}

# Writes the bash, zsh and fish completion scripts of binary $1 into directory $2, named as each shell
# looks them up: linkcond, _linkcond, linkcond.fish. The bash script is sourced, never run, so its #! line goes.
generate_completions() {
    local binary=$1 output=$2
    "$binary" --generate-completion-script bash | sed '1{/^#!/d}' > "$output/linkcond"
    "$binary" --generate-completion-script zsh > "$output/_linkcond"
    "$binary" --generate-completion-script fish > "$output/linkcond.fish"
}

# Where scripts/install puts linkcond when no --prefix is given: /usr/local as root, ~/.local otherwise.
default_prefix() {
    if [ "$(id -u)" -eq 0 ]; then echo /usr/local; else echo "$HOME/.local"; fi
}
