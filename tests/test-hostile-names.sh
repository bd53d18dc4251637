#!/bin/bash
# File names are bytes. A program and files named with invalid UTF-8, a newline, a backslash and wide
# characters go through every command (before, such a profile made show/profiles/sessions/report/plan fail
# with InvalidArgs, optimize report failure and forget miss it): paths cross the bus escaped, losslessly,
# and come back to the daemon from what the CLI shows. Signals, which any user receives, carry no paths.
# Also: mount points given relative, with a trailing slash or twice; a renamed file under its new name;
# table columns with wide characters.
. "$(dirname "$0")/lib.sh"

setup_image
start_recording --filesystem="$MNT" <<EOC
[Optimize]
MinFileAgeSec=0
EOC

# what any user receives: an ordinary subscription as nobody, for the whole test
as_nobody "$BUS_LISTEN" 100 > "$TMP/signals" 2>&1 &
EXTRA_PIDS+=($!)
wait_until 10 grep -q '^ready' "$TMP/signals" || fail "listener: $(cat "$TMP/signals")"

mkdir -p "$MNT/bin" "$MNT/d"
PROG=$MNT/bin/prog$'\xff'
E_PROG="$MNT/bin/prog\\xff"                       # how it is shown and sent
cp "$OPEN_FILES" "$PROG"
files=("$MNT/d/new"$'\n'"line" "$MNT/d/back\\slash" "$MNT/d/bad"$'\xfe' "$MNT/d/文字" "$MNT/d/abcd"
       "$MNT/d/imm"$'\xfd')
shown=("$MNT/d/new\\x0aline" "$MNT/d/back\\\\slash" "$MNT/d/bad\\xfe" "$MNT/d/文字" "$MNT/d/abcd"
       "$MNT/d/imm\\xfd")
# interleaved appends, a sync after each round: every file in many extents, so optimize has work to do
for round in 1 2 3 4 5 6; do
        for f in "${files[@]}"; do head -c 65536 /dev/urandom >> "$f"; done
        sync
done
chattr +i "${files[5]}"                          # cannot be moved: a skipped file with a hostile name
"$PROG" "${files[@]}"
wait_until 30 has_profile "$E_PROG" || fail "no profile '$E_PROG': $(ctl profiles 2>&1)"
pass "launch of a program named with invalid UTF-8 recorded as $E_PROG"

out=$(ctl profiles) || fail "profiles failed: $out"
grep -qF "$E_PROG " <<<"$out" || fail "profiles does not show $E_PROG: $out"
ctl sessions | grep -qF "$E_PROG " || fail "sessions does not show $E_PROG"
ctl --json=short sessions | jq -e --arg n "$E_PROG" 'any(.[]; .profile == $n)' >/dev/null ||
        fail "sessions --json: $(ctl --json=short sessions)"
mapfile -t got < <(profile_paths "$E_PROG")
[ "${#got[@]}" = 7 ] || fail "show: ${#got[@]} paths: ${got[*]}"
for s in "${shown[@]}"; do
        printf '%s\n' "${got[@]}" | grep -qxF -- "$s" || fail "show lacks '$s': ${got[*]}"
done
# the raw name works as well as the shown one
[ "$(ctl --json=short show "$PROG" | jq -r .name)" = "$E_PROG" ] || fail "show with the raw name"
pass "profiles, sessions, show: every name escaped (${shown[0]}, ${shown[1]}, ${shown[2]}), raw or shown name accepted"

# columns: "文字" and "abcd" take 4 columns each, so the padding after them is the same
table=$(ctl show "$E_PROG")
pad_after() { grep -F "$1" <<<"$table" | sed "s|.*$1\( *\).*|\1|" | tr -d '\n' | wc -c; }
[ "$(pad_after "$MNT/d/文字")" = "$(pad_after "$MNT/d/abcd")" ] ||
        fail "misaligned: $(pad_after "$MNT/d/文字") vs $(pad_after "$MNT/d/abcd") spaces: $table"
pass "wide characters keep the columns aligned"

ctl report > /dev/null || fail "report failed"
ctl --json=short report "$E_PROG" | jq -e --arg n "$E_PROG" '.[0].name == $n' >/dev/null || fail "report NAME"
ctl --json=short plan > "$TMP/plan.json" || fail "plan failed: $(cat "$TMP/plan.json")"
jq -e --arg n "$E_PROG" 'any(.files[]; .profile == $n)' "$TMP/plan.json" >/dev/null ||
        fail "plan: $(cat "$TMP/plan.json")"
pass "report and plan"

checksum_all "$TMP/sums"
rc=0
ctl --json=short optimize > "$TMP/opt.json" || rc=$?
chattr -i "${files[5]}"
jq -e '.state == "done" and .moved_files >= 5' "$TMP/opt.json" >/dev/null || fail "optimize exited $rc: $(cat "$TMP/opt.json")"
jq -e --arg p "${shown[5]}" 'any(.skipped[]; .path == $p)' "$TMP/opt.json" >/dev/null ||
        fail "the immutable file is not among the skipped: $(cat "$TMP/opt.json")"
[ "$rc" = 0 ] || fail "optimize exited $rc"
verify_checksums "$TMP/sums"
pass "optimize: $(jq -c '{state, moved_files, skipped: [.skipped[].path]}' "$TMP/opt.json"), checksums equal"

id=$(jq .id "$TMP/opt.json")
busctl --system call org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        GetRunSkipped t "$id" | grep -qF 'imm\\xfd' || fail "GetRunSkipped $id"
# dbus-send prints the error names (busctl only a generic text for AccessDenied)
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetRunSkipped uint64:999999 2>&1) && fail "GetRunSkipped of no run: $out"
grep -q "org.seekless.Seekless1.Error.NoSuchRun" <<<"$out" || fail "no run: $out"
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetRunSkipped uint64:"$id" 2>&1) && fail "nobody got the skipped list: $out"
grep -q "org.freedesktop.DBus.Error.AccessDenied: Only root may" <<<"$out" || fail "nobody: $out"
pass "GetRunSkipped: the list for root, NoSuchRun, AccessDenied for nobody"

# mount points: relative, trailing slash, "//", twice: the same filesystem, in Plan and Optimize alike
for args in "$MNT/" "$MNT//" "$MNT $MNT/"; do
        # shellcheck disable=SC2086
        ctl --json=short plan $args > "$TMP/p.json" || fail "plan $args: $(cat "$TMP/p.json")"
        jq -e --arg m "$MNT" '[.filesystems[].mount] == [$m]' "$TMP/p.json" >/dev/null || fail "plan $args: $(cat "$TMP/p.json")"
        # shellcheck disable=SC2086
        ctl --json=short optimize $args > "$TMP/o.json" || fail "optimize $args: $(cat "$TMP/o.json")"
done
(cd "$(dirname "$MNT")" && ctl plan "$(basename "$MNT")" > /dev/null) || fail "plan with a relative mount point"
for method in Plan Optimize; do
        busctl --system call org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
                "$method" as 2 "$MNT" "$MNT" > /dev/null || fail "$method with a mount point given twice"
done
pass "mount points normalised and deduplicated in plan and optimize"

# a bad escape is an argument error, not a missing profile
out=$(busctl --system call org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        GetProfile s "$MNT/bin/prog\\q" 2>&1) && fail "bad escape accepted"
grep -q "backslash" <<<"$out" || fail "bad escape: $out"

# renamed since recorded: shown under its name now
mv "$MNT/d/abcd" "$MNT/d/renamed"
mapfile -t got < <(profile_paths "$E_PROG")
printf '%s\n' "${got[@]}" | grep -qxF "$MNT/d/renamed" || fail "renamed file not under its new name: ${got[*]}"
printf '%s\n' "${got[@]}" | grep -qxF "$MNT/d/abcd" && fail "renamed file under its old name: ${got[*]}"
pass "a renamed file is shown under its new name"

ctl forget "$E_PROG" > /dev/null || fail "forget $E_PROG"
has_profile "$E_PROG" && fail "profile still there after forget"
pass "forget with the shown name"

# what nobody received: signals that name no file and no program
kill "${EXTRA_PIDS[0]}"; wait "${EXTRA_PIDS[0]}" 2>/dev/null || true; EXTRA_PIDS=()
grep -q '^SessionRecorded [0-9]* app 7$' "$TMP/signals" || fail "no SessionRecorded seen: $(cat "$TMP/signals")"
grep -q '^RunFinished [0-9]* done [0-9]* [0-9]* 1$' "$TMP/signals" || fail "no RunFinished seen: $(cat "$TMP/signals")"
grep -q "$MNT\|prog\|/d/" "$TMP/signals" && fail "a signal carried a path: $(grep "$MNT\|prog\|/d/" "$TMP/signals")"
pass "nobody received $(grep -vc ready "$TMP/signals") signals, none with a path"
