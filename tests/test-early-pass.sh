#!/bin/bash
# A file skipped by a run because it was a running executable is queued; once the program no longer
# runs, `seeklessd --early-pass` (what seekless-early.service runs early in the boot) moves it, within
# EarlyBudgetSec= (a pass whose budget runs out first leaves it queued), and a second pass finds nothing to
# do. Checked with filefrag and sha256sum. A queued
# program that already runs when the early pass starts (PID 1, journald, udevd on a real boot) can never
# be moved while the system is up: the pass says so once and does not queue it again.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EarlyBudgetSec=30
EOC
bash "$SOURCE_ROOT/tools/age-image.sh" "$MNT" 9 20 512 | sed 's/^/  /'
mkdir -p "$MNT/bin"
cp "$OPEN_FILES" "$MNT/bin/prog"
# the sleeper is written in fragments so that moving it is visible
for _ in $(seq 8); do head -c 8192 /bin/sleep >> "$MNT/aged/f000"; sync; done
cat /bin/sleep > "$MNT/bin/sleeper"; chmod +x "$MNT/bin/sleeper"
cat /bin/sleep > "$MNT/bin/always"; chmod +x "$MNT/bin/always"; sync
"$MNT/bin/prog" "$MNT/bin/sleeper" "$MNT/bin/always" "$MNT"/aged/f*
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"

"$MNT/bin/sleeper" 600 &
SLEEPER=$!
EXTRA_PIDS+=($SLEEPER)
"$MNT/bin/always" 600 &
ALWAYS=$!
EXTRA_PIDS+=($ALWAYS)
sleep 0.5
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
for f in sleeper always; do
        jq -e --arg s "$MNT/bin/$f" 'any(.skipped[]; .path == $s and (.reason | test("running executable")))' \
                "$TMP/opt.json" >/dev/null || fail "running $f was not skipped: $(jq -c .skipped "$TMP/opt.json")"
done
before=$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')
sum=$(sha256sum < "$MNT/bin/sleeper")
kill "$SLEEPER"; wait "$SLEEPER" 2>/dev/null || true
stop_daemon
pass "optimize skipped the running executable and queued it"

# a pass whose budget is spent before it reaches the file leaves it queued for the next boot's pass
sed 's/^EarlyBudgetSec=30$/EarlyBudgetSec=0/' "$CONF" > "$TMP/no-budget.conf"
"$SEEKLESSD" --early-pass --config="$TMP/no-budget.conf" --state-dir="$STATE" --filesystem="$MNT" \
        > "$TMP/early0.log" 2>&1 || fail "early pass without budget failed: $(cat "$TMP/early0.log")"
grep -q "EarlyBudgetSec= ran out" "$TMP/early0.log" || fail "the budget did not run out: $(cat "$TMP/early0.log")"
grep -q "early pass: $MNT/bin/sleeper: moved" "$TMP/early0.log" && fail "moved without a budget"
[ "$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')" = "$before" ] || fail "the sleeper moved"
pass "a pass out of budget moved nothing: '$(grep "early pass on" "$TMP/early0.log" | tail -n 1)'"
grep -q "early pass: $MNT/bin/always: not moved: running since before the early pass" "$TMP/early0.log" ||
        fail "the program still running was not reported: $(cat "$TMP/early0.log")"
grep -q "early pass on $MNT: 1 of 2 queued files to move" "$TMP/early0.log" ||
        fail "the running program was not left out of the pass's donor: $(cat "$TMP/early0.log")"
pass "a queued program still running at the early pass is reported, not moved, left out of the donor"

"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early.log" 2>&1 ||
        fail "early pass failed: $(cat "$TMP/early.log")"
grep -q "early pass: $MNT/bin/sleeper: moved" "$TMP/early.log" || fail "not moved: $(cat "$TMP/early.log")"
after=$(filefrag -v "$MNT/bin/sleeper" | awk '/^ *0:/ { print $4 }')
[ "$before" != "$after" ] || fail "filefrag shows the sleeper where it was ($before)"
drop_file_pages "$MNT/bin/sleeper"     # read from the disk ("always" still runs from the image)
[ "$(sha256sum < "$MNT/bin/sleeper")" = "$sum" ] || fail "the sleeper's content changed"
"$MNT/bin/sleeper" 0 || fail "the moved program does not run"
pass "the next pass moved it (physical start $before -> $after), content intact, it still runs"
grep -q "early pass on $MNT: 1 of 1 queued files to move" "$TMP/early.log" ||
        fail "the program still running was queued again: $(cat "$TMP/early.log")"

"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early2.log" 2>&1 ||
        fail "second early pass failed"
grep -q "nothing queued" "$TMP/early2.log" || fail "second pass: $(cat "$TMP/early2.log")"
pass "a second early pass finds nothing to do (the program that runs that early is not queued again)"

# with the initramfs stage in the boot, whose early pass could work on this filesystem (its status in the
# run directory: EARLY_OUTCOME, ROOT_FSID; seekless-initramfs(8)), a program that runs at the early pass
# stays queued for the next boot's stage, which moves it before it runs
start_daemon --filesystem="$MNT"
ctl --json=short optimize > "$TMP/opt3.json" || fail "optimize failed: $(cat "$TMP/opt3.json")"
jq -e --arg s "$MNT/bin/always" 'any(.skipped[]; .path == $s and (.reason | test("running executable")))' \
        "$TMP/opt3.json" >/dev/null || fail "the running program was not queued again: $(jq -c .skipped "$TMP/opt3.json")"
stop_daemon
mkdir -p "$RUN_DIR"
fsid=$(printf '%u' "$(sqlite3 "$STATE/seekless.db" "SELECT fsid FROM files WHERE path = '$MNT/bin/always'")")
printf 'OUTCOME=done\nSUMMARY=test\nEARLY_OUTCOME=nothing-queued\nROOT_FSID=%s\n' "$fsid" > "$RUN_DIR/initramfs.status"
for i in 1 2; do
        "$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --run-dir="$RUN_DIR" --filesystem="$MNT" \
                > "$TMP/early-stage$i.log" 2>&1 || fail "early pass failed: $(cat "$TMP/early-stage$i.log")"
        grep -q "early pass: $MNT/bin/always: not moved: running since before the early pass (queued for the initramfs stage at the next boot)" \
                "$TMP/early-stage$i.log" || fail "pass $i with the stage: $(cat "$TMP/early-stage$i.log")"
done
pass "with the initramfs stage: the program still running stays queued for it, pass after pass"
# a stage that was off (or skipped its pass) may be so for good: the program is skipped, as without one
printf 'OUTCOME=off\nSUMMARY=test\nEARLY_OUTCOME=off\nROOT_FSID=%s\n' "$fsid" > "$RUN_DIR/initramfs.status"
"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --run-dir="$RUN_DIR" --filesystem="$MNT" \
        > "$TMP/early-nostage.log" 2>&1 || fail "early pass failed"
grep -q "early pass: $MNT/bin/always: not moved: running since before the early pass (cannot be moved while the system is up)" \
        "$TMP/early-nostage.log" || fail "without the stage: $(cat "$TMP/early-nostage.log")"
pass "a stage switched off: skipped for good, as without one"
rm "$RUN_DIR/initramfs.status"
kill "$ALWAYS"; wait "$ALWAYS" 2>/dev/null || true

# a corrupt database: the pass exits 0 (the boot's unit does not fail) and leaves the file to seeklessd
head -c 65536 /dev/urandom > "$STATE/seekless.db"
rm -f "$STATE/seekless.db-wal" "$STATE/seekless.db-shm"
sum=$(sha256sum < "$STATE/seekless.db")
"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early3.log" 2>&1 ||
        fail "the early pass failed on a corrupt database: $(cat "$TMP/early3.log")"
grep -q "early pass: $STATE/seekless.db is corrupt or not seekless's, nothing to do" "$TMP/early3.log" ||
        fail "no word of the corrupt database: $(cat "$TMP/early3.log")"
[ "$(sha256sum < "$STATE/seekless.db")" = "$sum" ] || fail "the early pass changed the corrupt database"
pass "a corrupt database: the early pass says so, exits 0 and leaves it as it is"
fsck_clean
