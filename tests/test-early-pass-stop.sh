#!/bin/bash
# The early pass stopped part way. 40 executables that a run found running are queued; three passes follow:
#   1. killed (SIGKILL) after some files: the next pass takes over the files it did not move and does not
#      move again those it did, although its run was left "running";
#   2. sent SIGTERM after some files: it stops at the next file boundary, says so, exits 0, and what it
#      did not reach stays queued;
#   3. moves the rest.
# Each pass is held at a known point without timing: its log (stderr) goes into a pipe of one page that
# nobody reads, so the pass blocks in write(2) at the log line after some file's checkpoint (a line per
# file, the names long enough that a page holds about 15). Checked independently of seekless: the first
# block of every file (FIEMAP, filefrag) after each pass — each file moves in exactly one pass —, sha256 of
# every file, mb_stream_req restored, e2fsck -fn.
. "$(dirname "$0")/lib.sh"

N=40
setup_image 256M
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EarlyBudgetSec=10min
EOC
mkdir -p "$MNT/bin" "$MNT/d"
cp "$OPEN_FILES" "$MNT/bin/prog"
# something the run moves besides (a file in fragments), so that it has a batch of its own
for _ in $(seq 8); do head -c 8192 /dev/urandom >> "$MNT/d/data"; head -c 4096 /dev/zero > "$MNT/d/gap.$RANDOM"; sync; done
long=$(printf 'a-program-with-a-long-name-%.0s' {1..6})
EXES=()
for i in $(seq -w 1 $N); do
        cp /bin/sleep "$MNT/bin/$long$i"
        EXES+=("$MNT/bin/$long$i")
done
sync
"$MNT/bin/prog" "$MNT/d/data" "${EXES[@]}"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"

SLEEPERS=()
for e in "${EXES[@]}"; do
        "$e" 600 &
        SLEEPERS+=($!)
        EXTRA_PIDS+=($!)
done
sleep 0.5
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
queued=$(jq '[.skipped[] | select(.reason | test("queued for a later pass"))] | length' "$TMP/opt.json")
[ "$queued" = "$N" ] || fail "$queued of $N running programs queued: $(jq -c .skipped "$TMP/opt.json")"
wait_until 60 not_optimizing || fail "the run did not end"
kill "${SLEEPERS[@]}"; wait "${SLEEPERS[@]}" 2>/dev/null || true
EXTRA_PIDS=()        # waited for: their pids may be anyone's now
stop_daemon
checksum_all "$TMP/sums"
SYSFS=/sys/fs/ext4/${LOOP#/dev/}
stream_req=$(cat "$SYSFS/mb_stream_req")

first_blocks() {    # OUT: "NAME FIRST_BLOCK" of each queued file
        local e
        for e in "${EXES[@]}"; do
                echo "${e##*/} $(filefrag -v "$e" | awk '/^ *0:/ { print $4 }')"
        done | LC_ALL=C sort > "$1"
}
moved_between() {   # BEFORE AFTER: the names whose first block changed
        LC_ALL=C join "$1" "$2" | awk '$2 != $3 { print $1 }' | LC_ALL=C sort
}
# The main thread in write(2) into the pipe (wchan: pipe_write, anon_pipe_write since 6.14); or gone.
blocked_on_log() {
        grep -q 'pipe_write' "/proc/$1/wchan" 2>/dev/null || ! kill -0 "$1" 2>/dev/null
}
# A held pass must not outlive a failure: the harness's cleanup would wait for it (SIGTERM, ignored by an
# early pass of before).
fail_pass() {
        kill -KILL "$PASS" 2>/dev/null
        fail "$@"
}
# Starts a pass with its stderr into a one-page pipe that is read only through fd 9 (PASS: its pid).
start_held_pass() {
        local fifo=$TMP/log.fifo
        rm -f "$fifo"; mkfifo "$fifo"
        exec 8<>"$fifo"
        python3 -c 'import fcntl; fcntl.fcntl(8, fcntl.F_SETPIPE_SZ, 4096)'
        "$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" >/dev/null 2>"$fifo" &
        PASS=$!
        EXTRA_PIDS+=($PASS)
        exec 9<"$fifo"
        exec 8>&-
        wait_until 30 blocked_on_log "$PASS" || fail_pass "the pass did not reach its log's limit"
        kill -0 "$PASS" 2>/dev/null || fail "the pass ended before its log filled a page: $(cat <&9)"
}

first_blocks "$TMP/fb0"

# 1. killed
start_held_pass
kill -KILL "$PASS"; wait "$PASS" 2>/dev/null || true
EXTRA_PIDS=()
cat <&9 > "$TMP/pass1.log"; exec 9<&-
first_blocks "$TMP/fb1"
moved1=$(moved_between "$TMP/fb0" "$TMP/fb1" | wc -l)
[ "$moved1" -gt 0 ] && [ "$moved1" -lt "$N" ] || fail "the first pass moved $moved1 of $N files before it was killed"
pass "a pass killed (SIGKILL) after $moved1 of $N files"

# 2. the next pass takes over, and is stopped by SIGTERM
start_held_pass
kill -TERM "$PASS"
# the pass's watch thread (seekless-stop) ends once it has taken the signal (and set the stop): then let
# the pass go on
watching() { local c; c=$(cat /proc/"$PASS"/task/*/comm 2>/dev/null || true); grep -qx seekless-stop <<<"$c"; }
wait_until 30 eval '! watching' ||
        fail_pass "the pass did not take SIGTERM (its threads: $(cat /proc/"$PASS"/task/*/comm | tr '\n' ' '))"
cat <&9 > "$TMP/pass2.log"; exec 9<&-
rc=0; wait "$PASS" || rc=$?
EXTRA_PIDS=()
[ "$rc" = 0 ] || fail "the pass stopped by SIGTERM exited with $rc: $(cat "$TMP/pass2.log")"
grep -q "earlier pass(es) did not finish" "$TMP/pass2.log" || fail "the killed pass was not taken over: $(cat "$TMP/pass2.log")"
grep -q "stopped by SIGTERM" "$TMP/pass2.log" || fail "no word of the signal: $(cat "$TMP/pass2.log")"
first_blocks "$TMP/fb2"
again=$(LC_ALL=C comm -12 <(moved_between "$TMP/fb0" "$TMP/fb1") <(moved_between "$TMP/fb1" "$TMP/fb2"))
[ -z "$again" ] || fail "files the killed pass had moved were moved again: $again"
moved2=$(moved_between "$TMP/fb1" "$TMP/fb2" | wc -l)
logged2=$(grep -c ": moved$" "$TMP/pass2.log" || true)
[ "$moved2" -gt 0 ] || fail "the pass after the killed one moved nothing: $(cat "$TMP/pass2.log")"
[ $((moved1 + moved2)) -lt "$N" ] || fail "the pass stopped by SIGTERM moved every file left ($moved2)"
[ "$moved2" = "$logged2" ] || fail "$moved2 files moved, $logged2 said moved: one moved after the stop?"
pass "the next pass took over (none moved again), moved $moved2 and stopped at SIGTERM, exit 0: '$(grep "stopped by" "$TMP/pass2.log" | tail -n 1)'"

# 3. the rest
"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/pass3.log" 2>&1 ||
        fail "the last pass failed: $(cat "$TMP/pass3.log")"
first_blocks "$TMP/fb3"
again=$(LC_ALL=C comm -12 <( (moved_between "$TMP/fb0" "$TMP/fb1"; moved_between "$TMP/fb1" "$TMP/fb2") | LC_ALL=C sort) \
                 <(moved_between "$TMP/fb2" "$TMP/fb3"))
[ -z "$again" ] || fail "files moved before were moved again: $again"
moved3=$(moved_between "$TMP/fb2" "$TMP/fb3" | wc -l)
[ $((moved1 + moved2 + moved3)) = "$N" ] || fail "moved $moved1 + $moved2 + $moved3 of $N files"
"$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/pass4.log" 2>&1
grep -q "nothing queued" "$TMP/pass4.log" || fail "still queued after all moved: $(cat "$TMP/pass4.log")"
pass "the last pass moved the other $moved3: each file moved once ($moved1 + $moved2 + $moved3 = $N), nothing queued after"

[ "$(cat "$SYSFS/mb_stream_req")" = "$stream_req" ] || fail "mb_stream_req left at $(cat "$SYSFS/mb_stream_req")"
verify_checksums "$TMP/sums"
"${EXES[0]}" 0 || fail "a moved program does not run"
fsck_clean
pass "contents intact (sha256 of every file), mb_stream_req restored, e2fsck clean"
