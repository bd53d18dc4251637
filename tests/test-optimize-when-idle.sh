#!/bin/bash
# seeklessctl optimize --when-idle: the administrator's request waits in the daemon until the machine is idle
# (here: until IdleSec= has passed; pressure and load limits are out of reach so a busy CI machine can't make
# this flaky), and then runs although MinIntervalHours=24 holds back the runs the daemon would start on its
# own (a run was just cancelled). Status shows the request and why it waits; cancel drops it (it does not
# run later); a plain optimize supersedes it. What moved is checked with filefrag and sha256sum, not the
# daemon's word.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_bus
# Recorder=fanotify: the layout checked here is of whole files, which the tracepoint recorder's profiles of
# these reads are; the BPF recorder's hold the ranges a program used, whose layout optimize-ranges checks
conf() {   # IDLE_SEC RATE_MIBPS
        write_config <<EOC
[Record]
Recorder=fanotify
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$2
[Idle]
IdleSec=$1
BootQuietSec=0
MinIntervalHours=24
MaxIOPressure=100
MaxLoadPerCPU=1000
EOC
}
prop() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager "$1"
}
idle_status() { prop IdleStatus | sed 's/^s "//; s/"$//'; }
nothing_queued() { [ "$(prop QueuedOptimization)" = "(tas) 0 0" ]; }
interval_blocks() { idle_status | grep -q "^waiting: ran .* ago (MinIntervalHours=24)$"; }
unmoved() { [ "$(discontinuities_of "${order[@]}")" = "$1" ] || fail "$2: the layout changed"; }

# --- 1. IdleSec=1h: queued and waiting, status, cancel, superseded by a plain optimize ---
conf 1h 1
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
rc=0; out=$(ctl optimize --when-idle /nonexistent 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q "'/nonexistent' is not a watched" <<<"$out" && nothing_queued ||
        fail "queueing an unwatched mount: exit $rc: $out"
pass "an unwatched mount is refused at once, nothing queued"
setup_aged_profile 11 30 512
mapfile -t order < <(profile_paths "$P")
checksum_all "$TMP/sums"
aged=$(discontinuities_of "${order[@]}")
[ "$aged" -gt 10 ] || fail "the aged image is not aged enough ($aged discontinuities)"

ctl optimize --when-idle > "$TMP/queue.out" || fail "optimize --when-idle failed: $(cat "$TMP/queue.out")"
grep -qx "Optimization queued: it starts by itself when the machine is idle." "$TMP/queue.out" ||
        fail "optimize --when-idle does not say it queued: $(cat "$TMP/queue.out")"
grep -qx "Idle policy: waiting: idle for [0-9]* s of 1 h (IdleSec=)" "$TMP/queue.out" ||
        fail "optimize --when-idle does not say what it waits for: $(cat "$TMP/queue.out")"
ctl status > "$TMP/status.out"
grep -qx " *Queued: optimization of every watched filesystem since .*, starts when idle" "$TMP/status.out" ||
        fail "status does not show the queued request: $(cat "$TMP/status.out")"
grep -q "Idle policy: waiting: idle for .* (IdleSec=)" "$TMP/status.out" || fail "status: $(cat "$TMP/status.out")"
grep -q "^Queued an optimization of every watched filesystem" "$DAEMON_LOG" || fail "the daemon did not log the request"
pass "queued: $(grep "Idle policy" "$TMP/queue.out")"

# a new request replaces the old one; --json
ctl --json=short optimize --when-idle "$MNT" > "$TMP/queue.json"
jq -e '.queued == true and .id == 0 and (.idle | startswith("waiting: idle for"))' "$TMP/queue.json" >/dev/null ||
        fail "optimize --when-idle --json: $(cat "$TMP/queue.json")"
ctl --json=short status > "$TMP/status.json"
jq -e --arg m "$MNT" '.queued.mounts == [$m] and .queued.queued_usec > 0 and .optimizing == false' \
        "$TMP/status.json" >/dev/null || fail "status --json: $(jq -c .queued "$TMP/status.json")"
sleep 3
unmoved "$aged" "queued, not idle"
pass "a queued request does not run before the machine is idle"

ctl --json=short cancel > "$TMP/cancel.json"
jq -e '.cancelled == false and .dropped == true' "$TMP/cancel.json" >/dev/null || fail "cancel: $(cat "$TMP/cancel.json")"
nothing_queued || fail "cancel left the request queued: $(prop QueuedOptimization)"
ctl --json=short status | jq -e '.queued == null' >/dev/null || fail "status --json still shows a request"
ctl status | grep -q "Queued:" && fail "status still shows a request"
[ "$(ctl cancel)" = "No optimization is running or queued." ] || fail "second cancel: $(ctl cancel)"
pass "cancel drops the queued request"

ctl optimize --when-idle > /dev/null
nothing_queued && fail "not queued again"
ctl --json=short optimize --no-block > "$TMP/now.json" || fail "optimize --no-block: $(cat "$TMP/now.json")"
jq -e '.id > 0' "$TMP/now.json" >/dev/null || fail "plain optimize did not start: $(cat "$TMP/now.json")"
nothing_queued || fail "plain optimize did not supersede the queued request: $(prop QueuedOptimization)"
grep -q "Optimize supersedes the queued optimization" "$DAEMON_LOG" || fail "no log line for the superseded request"
ctl --json=short cancel > "$TMP/cancel2.json"
jq -e '.cancelled == true and .dropped == false' "$TMP/cancel2.json" >/dev/null ||
        fail "cancel of the plain run: $(cat "$TMP/cancel2.json")"
wait_until 10 not_optimizing || fail "the run did not stop"
wait_until 20 interval_blocks || fail "after a run, the daemon's own runs should wait for MinIntervalHours: '$(idle_status)'"
partial=$(discontinuities_of "${order[@]}")
[ "$partial" -gt 5 ] || fail "the cancelled run moved too much to go on ($aged -> $partial discontinuities)"
pass "plain optimize supersedes the request (then cancelled: $aged -> $partial discontinuities)"
stop_daemon

# --- 2. IdleSec=15s: a dropped request does not run once the machine is idle ---
conf 15s 0
start_daemon --filesystem="$MNT"
t0=$SECONDS
wait_until 20 interval_blocks || fail "the daemon's own runs should wait for MinIntervalHours: '$(idle_status)'"
ctl optimize --when-idle | grep -qx "Idle policy: waiting: idle for [0-9]* s of 15 s (IdleSec=)" ||
        fail "queue: '$(idle_status)'"
ctl cancel | grep -qx "Dropped the queued optimization." || fail "cancel did not drop the request"
wait=$((t0 + 15 + 12 - SECONDS))   # IdleSec= and one more check period
[ "$wait" -le 0 ] || sleep "$wait"
not_optimizing || fail "a dropped request started"
unmoved "$partial" "dropped request"
interval_blocks || fail "status: '$(idle_status)'"
grep -q "Idle: started" "$DAEMON_LOG" && fail "a run started by itself"
pass "idle for 15 s: the dropped request did not run, the daemon's own runs wait for MinIntervalHours"
stop_daemon

# --- 3. IdleSec=15s: the queued request runs by itself once idle, despite MinIntervalHours ---
conf 15s 2
start_daemon --filesystem="$MNT"
t0=$SECONDS
ctl optimize --when-idle > "$TMP/queue3.out"
grep -qx "Idle policy: waiting: idle for [0-9]* s of 15 s (IdleSec=)" "$TMP/queue3.out" ||
        fail "queue: $(cat "$TMP/queue3.out")"
sleep 4
unmoved "$partial" "queued, idle for only 5 s"
nothing_queued && fail "the request is gone before the machine was idle"
started() { grep -q "Idle: started the queued optimization" "$DAEMON_LOG"; }
wait_until 40 started || fail "the queued optimization did not start by itself: '$(idle_status)'"
[ $((SECONDS - t0)) -ge 15 ] || fail "it started before IdleSec=15s had passed"
nothing_queued || fail "the request is still queued after its run started"
running() { idle_status | grep -qx "optimizing (queued by an administrator, started when idle)"; }
wait_until 10 running || not_optimizing || fail "status during the run: '$(idle_status)'"
wait_until 120 not_optimizing || fail "the queued run did not finish"
after=$(discontinuities_of "${order[@]}")
[ "$after" -lt "$partial" ] && [ "$after" -le 1 ] || fail "queued run: $partial -> $after discontinuities"
verify_checksums "$TMP/sums"
pass "queued request ran once idle for 15 s: $partial -> $after discontinuities, data intact"

wait_until 20 interval_blocks || fail "status after the run: '$(idle_status)'"
ctl --json=short optimize --when-idle > "$TMP/again.json"
jq -e '.queued == false and .id == 0' "$TMP/again.json" >/dev/null ||
        fail "idle and nothing to move: $(cat "$TMP/again.json")"
nothing_queued || fail "a request that ran at once is still queued"
[ "$(discontinuities_of "${order[@]}")" = "$after" ] || fail "the layout changed again"
pass "queued while idle: decided at once (nothing left to move)"
stop_daemon
fsck_clean
