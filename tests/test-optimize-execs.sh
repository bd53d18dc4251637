#!/bin/bash
# No exec fails because of a move. A file open for writing cannot be exec'd (ETXTBSY), and the mover opens
# what it moves for writing: a program and an ELF interpreter (of a #! script), both aged on the image and in
# a launch profile, are exec'd in two loops (at least 500 times each) while seekless optimizes. Not one
# exec may fail: the daemon holds the execs of a file while it has it open for writing, and lets the file
# go after the 1 MiB chunk under way as soon as one waits. The log must say execs waited (the loops did
# meet the moves). Then, with the loops stopped, the rest is moved and nothing skipped; every file's
# checksum is unchanged and e2fsck -fn is clean. SEEKLESS_TEST_EXECS_NOT_HELD=1 skips the check that execs
# waited (for trying the test against a daemon that holds none).
. "$(dirname "$0")/lib.sh"

: "${OPEN_FILES:?run through meson test}" "${SCATTER:?}"
N=${EXECS:-500}
setup_image 512M
mkdir -p "$MNT/bin" "$MNT/fill"
# a static program that exits at once, padded to 8 MiB (data after the ELF image, carried by every move)
printf 'int main(void) { return 0; }\n' > "$TMP/nop.c"
cc -O2 -static -o "$TMP/nop" "$TMP/nop.c"
for f in exe interp; do
        cp "$TMP/nop" "$MNT/bin/$f"
        head -c 8M /dev/urandom >> "$MNT/bin/$f"
done
printf '#!%s\n' "$MNT/bin/interp" > "$MNT/bin/script"
chmod +x "$MNT/bin/script"
cp "$OPEN_FILES" "$MNT/bin/prog"
sync
printf '%s\n' "$MNT/bin/exe" "$MNT/bin/interp" | "$SCATTER" "$MNT/fill" 3 | tail -n 1 | sed 's/^/  /'

start_recording --filesystem="$MNT" <<EOC
[Optimize]
MinFileAgeSec=0
EOC
"$MNT/bin/prog" "$MNT/bin/exe" "$MNT/bin/interp"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"
checksum_all "$TMP/sums"

# LOOP NAME PROGRAM: exec PROGRAM until told to stop and at least N times; counts the failures
exec_loop() {
        local n=0 bad=0
        while [ ! -e "$TMP/stop" ] || [ "$n" -lt "$N" ]; do
                "$2" 2>>"$TMP/$1.err" || bad=$((bad + 1))
                n=$((n + 1))
                sleep 0.005
        done
        echo "$n $bad" > "$TMP/$1.count"
}
exec_loop exe "$MNT/bin/exe" & EXTRA_PIDS+=($!)
exec_loop script "$MNT/bin/script" & EXTRA_PIDS+=($!)

# Optimize while they run, a few times: a file let go mid-way is not in place yet and is moved again.
held() { grep -o 'Execs that waited for the move of their file so far: [0-9]*' "$DAEMON_LOG" | tail -n 1 | awk '{print $NF}'; }
for ((i = 1; i <= 3; i++)); do
        rc=0
        ctl --json=short optimize > "$TMP/opt$i.json" || rc=$?
        [ "$rc" = 0 ] || fail "optimize $i exited $rc: $(cat "$TMP/opt$i.json")"
        jq -c '[.moved_files, [.skipped[] | select(.path | test("/bin/")) | [.path, .reason]]]' "$TMP/opt$i.json" |
                sed "s|$MNT||g; s/^/  optimize $i: moved, skipped: /"
done
touch "$TMP/stop"
for p in "${EXTRA_PIDS[@]}"; do wait "$p"; done
EXTRA_PIDS=()
for f in exe script; do
        read -r n bad < "$TMP/$f.count"
        [ "$bad" = 0 ] || fail "$bad of $n execs of $f failed during the moves: $(sort "$TMP/$f.err" | uniq -c | head -3)"
        [ "$n" -ge "$N" ] || fail "only $n execs of $f"
done
[ "${SEEKLESS_TEST_EXECS_NOT_HELD:-}" = 1 ] ||
        [ "$(held)" -gt 0 ] || fail "no exec waited for a move: the loops never met one ($(grep -c 'exec' "$DAEMON_LOG") exec lines)"
pass "$(cat "$TMP/exe.count" | cut -d' ' -f1) execs of the program and $(cat "$TMP/script.count" | cut -d' ' -f1)" \
        "of the script (its interpreter) during three optimizations: none failed, $(held) waited for a move"

# quiet now: what is left is moved, nothing skipped; nothing changed
rc=0
ctl --json=short optimize > "$TMP/opt-last.json" || rc=$?
[ "$rc" = 0 ] || fail "last optimize exited $rc: $(cat "$TMP/opt-last.json")"
jq -e '.state == "done" and .moved_files > 0 and ([.skipped[] | select(.path | test("/bin/"))] | length) == 0' \
        "$TMP/opt-last.json" >/dev/null || fail "last optimize: $(jq -c '[.state, .moved_files, .skipped]' "$TMP/opt-last.json")"
verify_checksums "$TMP/sums"
stop_daemon
fsck_clean
pass "with the loops stopped, the rest moved ($(jq .moved_files "$TMP/opt-last.json") files), every checksum unchanged, e2fsck clean"
