#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# conf/seekless.conf, the configuration file the package ships, lists every key daemon/policy/conf.c
# parses, in its section, commented out, with the default seekless.conf(5) documents and a line of
# explanation above it, and no key the daemon does not know.
set -euo pipefail
: "${SOURCE_ROOT:?run through meson test}"
fail() { echo "FAIL: $*" >&2; exit 1; }
TMP=$(mktemp -d /tmp/seekless-test-conf-template.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# "Section Key" for each entry of conf.c's table: { "Record", "BootTailSec", CONFIG_SEC, ... }
sed -n 's/^[[:space:]]*{ *"\([A-Za-z]*\)", *"\([A-Za-z]*\)", *CONFIG_.*/\1 \2/p' \
        "$SOURCE_ROOT/daemon/policy/conf.c" | sort > "$TMP/parsed"
[ "$(wc -l < "$TMP/parsed")" -ge 20 ] || fail "read only $(wc -l < "$TMP/parsed") keys from conf.c's table"

# "Section Key Default" from the man page: the first "Defaults to X" after "*Key=*" under "# [Section]"
awk '
        function flush() { if (key != "") { print sec, key, (def == "" ? "-" : def) }; key = ""; def = "" }
        /^# \[[A-Za-z]+\] SECTION OPTIONS/ { flush(); sec = $2; gsub(/[][]/, "", sec); next }
        /^# / { flush(); sec = ""; next }
        sec != "" && /^\*[A-Za-z]+=\*$/ { flush(); key = $0; gsub(/[*=]/, "", key); text = ""; next }
        key != "" && def == "" {
                text = text " " $0
                if (match(text, /Defaults[[:space:]]+to[[:space:]]+[^[:space:]]+/)) {
                        def = substr(text, RSTART, RLENGTH); sub(/.*[[:space:]]/, "", def); sub(/[.,:;]$/, "", def)
                }
        }
        END { flush() }' "$SOURCE_ROOT/man/seekless.conf.5.scd" | sort > "$TMP/man"

# "Section Key Default" from the shipped file; every key line must follow a comment line that explains it
awk -v f=conf/seekless.conf '
        /^\[[A-Za-z]+\]$/ { sec = $0; gsub(/[][]/, "", sec); prev = ""; next }
        /^#?[A-Za-z]+=/ {
                if ($0 !~ /^#/) { printf "%s:%d: %s is set, not commented out\n", f, NR, $0 > "/dev/stderr"; bad = 1 }
                if (prev !~ /^# [^ ]/) { printf "%s:%d: no line of explanation above %s\n", f, NR, $0 > "/dev/stderr"; bad = 1 }
                k = $0; sub(/^#/, "", k); v = k; sub(/=.*/, "", k); sub(/^[^=]*=/, "", v)
                print sec, k, v
        }
        { prev = $0 }
        END { exit bad }' "$SOURCE_ROOT/conf/seekless.conf" | sort > "$TMP/file" || fail "conf/seekless.conf is malformed"

cut -d' ' -f1,2 "$TMP/file" > "$TMP/file-keys"
cut -d' ' -f1,2 "$TMP/man" > "$TMP/man-keys"
diff -u --label conf.c "$TMP/parsed" --label conf/seekless.conf "$TMP/file-keys" ||
        fail "conf/seekless.conf does not list exactly the keys conf.c parses (- missing, + unknown)"
diff -u --label conf.c "$TMP/parsed" --label man/seekless.conf.5.scd "$TMP/man-keys" ||
        fail "seekless.conf(5) does not document exactly the keys conf.c parses"
diff -u --label man/seekless.conf.5.scd "$TMP/man" --label conf/seekless.conf "$TMP/file" ||
        fail "a default in conf/seekless.conf differs from seekless.conf(5)"
echo "ok: conf/seekless.conf lists the $(wc -l < "$TMP/parsed") keys of conf.c with the defaults of seekless.conf(5)"
