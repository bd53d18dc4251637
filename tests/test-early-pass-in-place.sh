#!/bin/bash
# A running executable that optimize reports "queued for a later pass" is queued also when nothing else
# moves (the rest of its filesystem's profiles already in place): the early pass then moves it (FIEMAP,
# sha256, it still runs, e2fsck -fn). Once moved and unchanged, a later optimize that finds it running
# with nothing else to move says so and does not queue it again: the early pass would otherwise move it
# at every boot while nothing around it changed.
. "$(dirname "$0")/lib.sh"

setup_image 256M
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EarlyBudgetSec=30
EOC
mkdir -p "$MNT/bin"
cp "$OPEN_FILES" "$MNT/bin/prog"
# the launcher in one piece: in place by itself (the early pass moves what it moves wherever it lies)
cp /bin/sleep "$MNT/bin/sleeper"; sync
[ "$(file_extents "$MNT/bin/prog" | wc -l)" = 1 ] || fail "precondition: the launcher is not in one extent"
"$MNT/bin/prog" "$MNT/bin/sleeper"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"

"$MNT/bin/sleeper" 600 &
SLEEPER=$!
EXTRA_PIDS+=($SLEEPER)
sleep 0.5
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
jq -e '.id == 0' "$TMP/opt.json" >/dev/null || fail "something else moved: $(cat "$TMP/opt.json")"
jq -e --arg s "$MNT/bin/sleeper" 'any(.skipped[]; .path == $s and .reason == "running executable (queued for a later pass)")' \
        "$TMP/opt.json" >/dev/null || fail "the sleeper was not reported queued: $(cat "$TMP/opt.json")"
before=$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')
sum=$(sha256sum < "$MNT/bin/sleeper")
kill "$SLEEPER"; wait "$SLEEPER" 2>/dev/null || true
EXTRA_PIDS=()
stop_daemon
pass "nothing else to move, the running sleeper reported queued: $(jq -c .skipped "$TMP/opt.json")"

"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early.log" 2>&1 ||
        fail "early pass failed: $(cat "$TMP/early.log")"
grep -q "early pass: $MNT/bin/sleeper: moved" "$TMP/early.log" || fail "not moved: $(cat "$TMP/early.log")"
after=$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')
[ "$before" != "$after" ] || fail "filefrag shows the sleeper where it was ($before)"
fsck_clean      # and remounted: the sleeper is read from the disk
[ "$(sha256sum < "$MNT/bin/sleeper")" = "$sum" ] || fail "the sleeper's content changed"
"$MNT/bin/sleeper" 0 || fail "the moved program does not run"
pass "the early pass moved it (physical start $before -> $after), content intact, it still runs"

start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
"$MNT/bin/sleeper" 600 &
SLEEPER=$!
EXTRA_PIDS+=($SLEEPER)
sleep 0.5
ctl --json=short optimize > "$TMP/opt2.json" || fail "optimize failed: $(cat "$TMP/opt2.json")"
reason=$(jq -r --arg s "$MNT/bin/sleeper" '.skipped[] | select(.path == $s) | .reason' "$TMP/opt2.json")
[ "$reason" = "running executable (moved by an earlier run, unchanged since)" ] ||
        fail "the moved sleeper: '$reason' ($(cat "$TMP/opt2.json"))"
kill "$SLEEPER"; wait "$SLEEPER" 2>/dev/null || true
EXTRA_PIDS=()
stop_daemon
"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early2.log" 2>&1 ||
        fail "second early pass failed"
grep -q "nothing queued" "$TMP/early2.log" || fail "queued again: $(cat "$TMP/early2.log")"
[ "$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')" = "$after" ] || fail "the sleeper moved again"
pass "running again with nothing else to move: '$reason', not queued, not moved again"
fsck_clean
