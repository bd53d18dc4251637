#!/bin/bash
# The idle policy: while IdleSec= has not passed, status says so and nothing moves; once the machine has
# been idle long enough, an optimization starts by itself and lays the profile out (checked with filefrag
# and sha256sum, not the daemon's word); afterwards, with nothing left to move, it stays quiet.
# Pressure and load thresholds are set out of reach so a busy CI machine can't make this flaky; the
# decision logic for each condition is covered by the test-idle-policy unit test.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_bus
conf() {
        write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
# discontinuities over whole files: the tracepoint recorder whatever SEEKLESS_TEST_RECORDER says (as
# test-optimize)
Recorder=fanotify
[Optimize]
MinFileAgeSec=0
[Idle]
IdleSec=$1
BootQuietSec=0
MinIntervalHours=0
MaxIOPressure=100
MaxLoadPerCPU=1000
EOC
}
idle_status() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager IdleStatus | sed 's/^s "//; s/"$//'
}

conf 1h
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
setup_aged_profile 5 30 512
mapfile -t order < <(profile_paths "$P")
checksum_all "$TMP/sums"
aged=$(discontinuities_of "${order[@]}")
waiting() { idle_status | grep -q "^waiting: idle for .* (IdleSec=)"; }
wait_until 30 waiting || fail "status does not say why it waits: '$(idle_status)'"
ctl status | grep -q "Idle policy: waiting" || fail "seeklessctl status lacks the idle policy line"
[ "$(discontinuities_of "${order[@]}")" = "$aged" ] || fail "something moved before the machine was idle long enough"
pass "not idle long enough: '$(idle_status)', nothing moved"
stop_daemon

conf 2s
start_daemon --filesystem="$MNT"
started() { grep -q "Idle: started optimization" "$DAEMON_LOG"; }
wait_until 60 started || fail "no optimization started by itself: '$(idle_status)'"
wait_until 120 not_optimizing || fail "the idle run did not finish"
after=$(discontinuities_of "${order[@]}")
[ "$after" -lt "$aged" ] && [ "$after" -le 1 ] || fail "idle run: $aged -> $after discontinuities"
verify_checksums "$TMP/sums"
pass "idle for 2 s: optimization started by itself, $aged -> $after discontinuities, data intact"

quiet() { idle_status | grep -q "^idle:"; }
wait_until 30 quiet || fail "status after the run: '$(idle_status)'"
sleep 12     # one more check period: nothing left to move, so no new run
[ "$(grep -c "Idle: started optimization" "$DAEMON_LOG")" = 1 ] || fail "the idle policy started another run"
pass "nothing left to move: no further run"
stop_daemon
fsck_clean
