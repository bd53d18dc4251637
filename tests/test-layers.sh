#!/bin/bash
# The layers of the sources, kept by their includes. Every include of the project's own headers names its
# folder ("store/db.h": daemon/ is the include root of the daemon's stages, the source tree's top that of
# common/ and cli/), and a folder includes only folders of lower layers:
#
#   common < fs < store < record, record-bpf < profile, plan < policy < relocate, prefetch < initramfs <
#   manager < main
#
# record-bpf (the BPF page recorder's engine) shares record's layer. record sits below profile because
# profile turns the recorder's sessions into stored profiles
# (profile_store_session() takes a record/session.h Session); plan shares profile's layer and neither
# includes the other; prefetch (reading a profile's ranges ahead of a start) shares relocate's. initramfs (the
# initramfs stage, a program of its own) is built on both; the manager reads the status it leaves. Folders of
# one layer do not include each other. cli/ (seeklessctl) includes common/
# only (the D-Bus names, errors, JSON); nothing includes cli/. A new folder in daemon/ fails here until it
# has its place in LAYERS. Also fails on an include cycle across folders, on an include without its folder
# and on one of a header that is not in the tree. config.h (generated in the build tree) is the one bare
# name; a BPF skeleton ("record-bpf/pages.skel.h") is generated in the build tree too.
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}"
cd "$SOURCE_ROOT"

LAYERS=("common" "fs" "store" "record record-bpf" "profile plan" "policy" "relocate prefetch" "initramfs" "manager"
        "main")
declare -A rank
for i in "${!LAYERS[@]}"; do
        for f in ${LAYERS[$i]}; do
                rank[$f]=$i
        done
done
order=$(IFS='<'; echo "${LAYERS[*]}" | sed 's/ /, /g; s/,*<,*/ < /g')

errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }

for d in daemon/*/; do
        d=${d#daemon/}; d=${d%/}
        [ -n "${rank[$d]:-}" ] || fail "daemon/$d/ has no layer: give it its place in LAYERS (tests/test-layers.sh)"
done

layer_of() {    # the folder (layer) of a source file
        case $1 in
        daemon/main.c) echo main ;;
        daemon/*/*) local p=${1#daemon/}; echo "${p%%/*}" ;;
        common/*) echo common ;;
        cli/*) echo cli ;;
        esac
}

edges=$(mktemp /tmp/seekless-test-layers.XXXXXX)
trap 'rm -f "$edges"' EXIT
n=0
while IFS= read -r hit; do
        file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
        target=$(sed 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/' <<<"$text")
        n=$((n + 1))
        [ "$target" = config.h ] && continue
        if [[ $target != */* ]]; then
                fail "$file:$line: #include \"$target\" names no folder (write \"<folder>/$target\")"
                continue
        fi
        to=${target%%/*}
        case $to in
        common|cli) path=$target ;;
        *) path=daemon/$target ;;
        esac
        if [ ! -e "$path" ] && [[ $path != *.skel.h ]]; then
                fail "$file:$line: #include \"$target\": no $path in the tree"
                continue
        fi
        from=$(layer_of "$file")
        [ "$from" = "$to" ] && continue
        echo "$from $to" >> "$edges"
        if [ "$from" = cli ]; then
                [ "$to" = common ] || fail "$file:$line: cli includes $to ($target): cli/ may include common/ only"
                continue
        fi
        if [ "$to" = cli ]; then
                fail "$file:$line: $from includes cli ($target): nothing but cli/ includes cli/"
                continue
        fi
        [ -n "${rank[$from]:-}" ] || continue   # its folder's missing layer is reported above
        if [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
                if [ "${rank[$to]}" -eq "${rank[$from]}" ]; then
                        how="the same layer"
                else
                        how="a higher layer"
                fi
                fail "$file:$line: $from includes $to ($target): $to is $how than $from (layers: $order)"
        fi
done < <(grep -rn --include='*.c' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
                daemon common cli)

[ "$n" -gt 100 ] || fail "only $n includes found: the tree is not where this test looks"

# a cycle across folders, whatever the order above says
if ! loop=$(sort -u "$edges" | tsort 2>&1 >/dev/null) || [ -n "$loop" ]; then
        fail "include cycle(s) across folders: $(awk '/input contains a loop/ { if (c) print c " -> " f; c = ""; next }
                { sub(/^tsort: /, ""); if (c == "") { c = $0; f = $0 } else c = c " -> " $0 }
                END { if (c) print c " -> " f }' <<<"$loop" | paste -sd ';' | sed 's/;/; /g')"
fi

[ "$errors" -eq 0 ] || { echo "$errors layer violation(s)" >&2; exit 1; }
echo "ok: $n includes in daemon/, common/, cli/ follow the layers ($order; cli/ on common/ only)"
