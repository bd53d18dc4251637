#!/bin/bash
# The edges: a nearly full filesystem (no room for the donor), cancel in the middle of a run, and kill -9
# of the daemon in the middle of a run followed by a restart that resumes it. Every case ends with intact
# data, no leaked space (free blocks back to the pre-run figure ± 1%) and a clean e2fsck.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=1
EOC
setup_aged_profile 23 40 1024
mapfile -t order < <(profile_paths "$P")
checksum_all "$TMP/sums"
aged_disc=$(discontinuities_of "${order[@]}")

within_1pct() {   # A B
        awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b / 100) }'
}

# --- nearly full: no room for the donor ---
free0=$(free_blocks)
# fill it up (ext4 keeps a reserve nobody's fallocate may use, so fill until ENOSPC), then free 2 MiB:
# far less than the ~20 MiB the donor needs
mkdir "$MNT/filler"
fallocate -l $(( (free0 - 16384) * 4096 )) "$MNT/filler/big"
for ((i = 0; ; i++)); do fallocate -l 1M "$MNT/filler/$i" 2>/dev/null || break; done
rm -f "$MNT/filler/0" "$MNT/filler/1"; sync
rc=0; ctl --json=short optimize > "$TMP/full.json" || rc=$?
jq -e '.moved_files == 0 and any(.skipped[]; .reason | test("no space"))' "$TMP/full.json" >/dev/null ||
        fail "full filesystem: $(cat "$TMP/full.json")"
rm -r "$MNT/filler"; sync
verify_checksums "$TMP/sums"
[ "$(discontinuities_of "${order[@]}")" = "$aged_disc" ] || fail "layout changed although nothing could move"
pass "nearly full: nothing moved, reason 'no space', data intact"

# --- cancel mid-run ---
free0=$(free_blocks)
ctl --json=short optimize > "$TMP/cancel.json" &
opt_pid=$!
wait_until 30 optimizing || fail "optimization did not start"
sleep 2
ctl cancel | grep -q "Cancelling" || fail "cancel did not find the run"
wait_until 10 not_optimizing || fail "the run did not stop within 10 s of cancel"
rc=0; wait "$opt_pid" || rc=$?
[ "$rc" = 1 ] || fail "optimize after cancel exited $rc"
jq -e '.state == "cancelled" and .moved_files > 0' "$TMP/cancel.json" >/dev/null || fail "cancel: $(cat "$TMP/cancel.json")"
sync
within_1pct "$(free_blocks)" "$free0" || fail "space leaked after cancel: $free0 -> $(free_blocks) free blocks"
verify_checksums "$TMP/sums"
pass "cancel: stopped, $(jq .moved_files "$TMP/cancel.json") files moved, data intact, no space leaked"

# --- kill -9 mid-run, restart resumes ---
free0=$(free_blocks)
ctl --json=short optimize --no-block > "$TMP/kill.json" || fail "optimize --no-block failed"
wait_until 30 optimizing || fail "optimization did not start"
sleep 3
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
sync
# the files the daemon checkpointed as done, and where they are now (filefrag, not the daemon's word)
sqlite3 "$STATE/seekless.db" "SELECT f.path FROM run_files rf JOIN files f ON f.id = rf.file_id
        WHERE rf.run_id = (SELECT MAX(id) FROM runs) AND rf.state = 'done'" > "$TMP/done.list"
[ -s "$TMP/done.list" ] || fail "nothing was checkpointed before the kill"
while read -r f; do filefrag -v "$f" | awk '/^ *[0-9]+:/'; done < "$TMP/done.list" > "$TMP/done.extents"
within_1pct "$(free_blocks)" "$free0" || fail "space leaked after kill -9: $free0 -> $(free_blocks) free blocks"
verify_checksums "$TMP/sums"
pass "kill -9 mid-run: data intact, the donor's space was given back"

# resumed by the idle policy, not at start: with a long IdleSec= nothing moves at start ...
write_config <<EOC
[Record]
BootWindowSec=1
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=1
[Idle]
IdleSec=3600
EOC
start_daemon --filesystem="$MNT"
sleep 3
! grep -q "Resuming interrupted run" "$DAEMON_LOG" || fail "the interrupted run was resumed at start, not when idle"
not_optimizing || fail "a run started at daemon start"
stop_daemon
# ... and with a short one it resumes once the machine has been idle that long
write_config <<EOC
[Record]
BootWindowSec=1
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=1
[Idle]
IdleSec=2
BootQuietSec=0
MaxLoadPerCPU=100
MaxIOPressure=100
EOC
start_daemon --filesystem="$MNT"
wait_until 60 grep -q "Resuming interrupted run" "$DAEMON_LOG" || fail "the interrupted run was not resumed when idle"
line=$(grep "Resuming interrupted run" "$DAEMON_LOG" | tail -n1)
todo=$(sed -E 's/.*: ([0-9]+) of ([0-9]+) files.*/\1/' <<<"$line"); all=$(sed -E 's/.*: ([0-9]+) of ([0-9]+) files.*/\2/' <<<"$line")
[ "$todo" -lt "$all" ] || fail "resume redoes finished work: $line"
wait_until 120 not_optimizing || fail "the resumed run did not finish"
while read -r f; do filefrag -v "$f" | awk '/^ *[0-9]+:/'; done < "$TMP/done.list" > "$TMP/done.extents.after"
cmp -s "$TMP/done.extents" "$TMP/done.extents.after" || fail "the resume moved files that were already done"
verify_checksums "$TMP/sums"
sync
within_1pct "$(free_blocks)" "$free0" || fail "space leaked after resume: $free0 -> $(free_blocks)"
after=$(discontinuities_of "${order[@]}")
[ "$after" -lt "$aged_disc" ] || fail "no improvement after resume: $aged_disc -> $after"
pass "restart resumed the run ($todo of $all files left; the $(wc -l < "$TMP/done.list") done ones stayed put), layout $aged_disc -> $after discontinuities"

stop_daemon
fsck_clean
pass "e2fsck -fn clean"
