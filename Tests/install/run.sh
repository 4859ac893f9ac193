#!/usr/bin/env bash
# Installs linkcond into a temporary prefix with scripts/install and removes it with scripts/uninstall, checking
# the exact file list, that each file is where its reader looks (PATH, man, bash-completion), and that
# uninstalling leaves the prefix exactly as it was, including a file that was there before.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d /tmp/linkcond-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
    local description=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok: $description"; else failed=$((failed + 1)); echo "FAILED: $description"; fi
}

mkdir -p "$prefix/bin" "$prefix/share/man/man1"
echo "someone else's" > "$prefix/bin/other-tool"
(cd "$prefix" && find . | sort) > "$work/before"

"$repo/scripts/install" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; echo "FAILED: scripts/install"; exit 1; }

profiles=$(cd "$repo/profiles" && ls *.profile *.scenario | sed 's|^|share/linkcond/profiles/|')
expected=$(printf '%s\n' bin/linkcond share/man/man1/linkcond.1 share/bash-completion/completions/linkcond \
    share/zsh/site-functions/_linkcond share/fish/vendor_completions.d/linkcond.fish $profiles \
    share/linkcond/install-manifest | sort)
actual=$(cd "$prefix" && find . -type f ! -path ./bin/other-tool | sed 's|^\./||' | sort)
check "the install wrote exactly the binary, man page, three completions, profiles and manifest" \
    test "$expected" = "$actual"
listed=$(sed -n '/[^/]$/s|^'"$prefix"'/||p' "$prefix/share/linkcond/install-manifest" | sort)
check "the manifest lists every installed file but itself" \
    test "$listed" = "$(grep -v install-manifest <<<"$expected")"

version=$(sed -n 's/^public let linkcondVersion = "\(.*\)"$/\1/p' "$repo/Sources/LinkConditioner/Version.swift")
check "linkcond on PATH prints the source's version" test "$(PATH="$prefix/bin:$PATH" linkcond --version)" = "$version"
check "the binary needs no Swift runtime library" bash -c "! ldd '$prefix/bin/linkcond' | grep -q -e libswift -e libFoundation -e /opt/swift"
check "man finds the page through PATH" test "$(PATH="$prefix/bin:$PATH" man -w linkcond)" = "$prefix/share/man/man1/linkcond.1"
check "the man page renders without warnings" test -z "$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$prefix/share/man/man1/linkcond.1" 2>&1 >/dev/null)"
manual=$(MANWIDTH=200 man -l "$prefix/share/man/man1/linkcond.1" 2>/dev/null)
# Every command the installed binary's help lists, so that a new command missing from the page fails here.
commands=$("$prefix/bin/linkcond" --help | sed -n '/^SUBCOMMANDS:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' | grep -vx help)
check "the help lists the commands (got: $(echo $commands))" test "$(wc -w <<<"$commands")" -ge 15
for command in $commands; do
    check "the man page describes linkcond $command" grep -qE "^ +$command( |$)" <<<"$manual"
done
completions=$(bash -c ". '$prefix/share/bash-completion/completions/linkcond'
    COMP_WORDS=(linkcond profile ''); COMP_CWORD=2; COMP_LINE='linkcond profile '; COMP_POINT=\${#COMP_LINE}
    _linkcond; echo \"\${COMPREPLY[*]}\"")
check "bash completes profile's subcommands (got: $completions)" grep -qw show <<<"$completions"
if [ -f /usr/share/bash-completion/bash_completion ]; then
    loaded=$(XDG_DATA_DIRS="$prefix/share:/usr/share" bash -c '. /usr/share/bash-completion/bash_completion
        _completion_loader linkcond; complete -p linkcond' 2>&1)
    check "bash-completion finds the completion under the prefix on demand (got: $loaded)" grep -q _linkcond <<<"$loaded"
fi
if command -v zsh >/dev/null; then
    zsh_function=$(zsh -fc "fpath=('$prefix/share/zsh/site-functions' \$fpath); autoload -U compinit; compinit -u -D; print \${_comps[linkcond]}")
    check "zsh's compinit picks up _linkcond from site-functions (got: $zsh_function)" test "$zsh_function" = _linkcond
fi
if command -v fish >/dev/null; then
    fish_completions=$(PATH="$prefix/bin:$PATH" XDG_DATA_DIRS="$prefix/share:/usr/share" fish -c 'complete -C "linkcond prof"' | cut -f1 | sort | xargs)
    check "fish completes from vendor_completions.d (got: $fish_completions)" test "$fish_completions" = "profile profiles"
fi

"$repo/scripts/install" --prefix "$prefix" > "$work/reinstall.log" 2>&1 || { cat "$work/reinstall.log"; echo "FAILED: second scripts/install"; exit 1; }
check "installing again gives the same files" test "$(cd "$prefix" && find . -type f ! -path ./bin/other-tool | sed 's|^\./||' | sort)" = "$expected"

"$repo/scripts/uninstall" --prefix "$prefix" > "$work/uninstall.log" 2>&1 || { cat "$work/uninstall.log"; echo "FAILED: scripts/uninstall"; exit 1; }
check "uninstall leaves the prefix exactly as before, someone else's file included" \
    test "$(cd "$prefix" && find . | sort)" = "$(cat "$work/before")"
status=0
"$repo/scripts/uninstall" --prefix "$prefix" > "$work/again.log" 2>&1 || status=$?
check "a second uninstall fails (1) and says nothing is installed" \
    bash -c "test $status -eq 1 && grep -q 'no linkcond installed' '$work/again.log'"

echo "install: $passed passed, $failed failed"
((failed == 0))
