#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The bash completion of seeklessctl offers every verb and every long option seeklessctl --help lists,
# the values of --json=, and nothing for a non-root user's profile names but "boot" (seeklessctl
# profiles needs root). zsh and fish files: every verb is in them.
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}" "${SEEKLESSCTL:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
C=$SOURCE_ROOT/completion
. "$C/seeklessctl.bash"

# complete WORD...: the candidates for the last word of "seeklessctl WORD..."
complete_words() {
        COMP_WORDS=(seeklessctl "$@")
        COMP_CWORD=$#
        COMPREPLY=()
        _seeklessctl
        printf '%s\n' "${COMPREPLY[@]}" | sort
}

help=$("$SEEKLESSCTL" --help)
verbs=$(sed -n '/^Commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p' <<< "$help" | sort -u)
opts=$(grep -o -- '--[a-z-]\+' <<< "$help" | sort -u)
[ "$(wc -l <<< "$verbs")" -ge 9 ] || fail "read only these verbs from --help: $verbs"
diff -u --label 'seeklessctl --help' <(echo "$verbs") --label completion <(complete_words '') ||
        fail "the verbs completed differ from --help's"
got=$(complete_words -- | sed 's/=$//')
for o in $opts; do grep -qx -- "$o" <<< "$got" || fail "option $o not completed (got: $got)"; done
[ "$(complete_words opt)" = optimize ] || fail "'opt' does not complete to optimize"
[ "$(complete_words --json = s | tr '\n' ' ')" = "short " ] || fail "--json = s (bash splits at =) does not complete to short"
[ "$(complete_words --json=p)" = "pretty" ] || fail "--json=p does not complete to pretty"
if [ "$(id -u)" != 0 ]; then
        [ "$(complete_words show '')" = boot ] || fail "non-root: show should offer only boot"
fi
for v in $verbs; do
        grep -q "'$v:" "$C/_seeklessctl" || fail "zsh completion lacks $v"
        grep -q -- "-a $v " "$C/seeklessctl.fish" || fail "fish completion lacks $v"
done
echo "ok: completion offers the $(wc -l <<< "$verbs") verbs and $(wc -w <<< "$opts") long options of --help"
