#!/bin/bash
# The layout-quality trigger (MaxQualityLossPercent=): after an optimization, MinIntervalHours=24 keeps the
# daemon from starting another run by itself while the layout stays as that run left it (the check runs
# and finds nothing). Once the profile's files are rewritten scattered (same content, same inodes, daemon
# stopped so nothing is recorded), their modeled read time is far past the threshold: an idle run starts
# before MinIntervalHours=, status and log say why, and it lays the files out again (filefrag), data intact.
# Pressure and load limits are out of reach so a busy CI machine can't make this flaky; the decision itself
# is covered by the test-idle-policy unit test.
. "$(dirname "$0")/lib.sh"

setup_image 1G
start_bus
# Recorder=fanotify: the layout checked here is of whole files, which the tracepoint recorder's profiles of
# these reads are; the BPF recorder's hold the ranges a program used, whose layout optimize-ranges checks
conf() {   # IDLE_SEC
        write_config <<EOC
[Record]
Recorder=fanotify
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=2
[Idle]
IdleSec=$1
BootQuietSec=0
MinIntervalHours=24
MaxIOPressure=100
MaxLoadPerCPU=1000
MaxQualityLossPercent=25
EOC
}
idle_status() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager IdleStatus | sed 's/^s "//; s/"$//'
}
interval_blocks() { idle_status | grep -q "^waiting: ran .* ago (MinIntervalHours=24)$"; }
checked() { grep -q "Idle: layout check:" "$DAEMON_LOG"; }

# Rewrite files in place, scattered: 16 KiB chunks appended round-robin (fsync each), a filler chunk after
# each, fillers deleted at the end. Same content and inode; only the blocks move.
refragment() {
        local f i wrote
        mkdir -p "$TMP/copies" "$MNT/filler"
        for f in "$@"; do
                cp "$f" "$TMP/copies/${f##*/}"
                : > "$f"
        done
        sync
        for ((i = 0; ; i++)); do
                wrote=0
                for f in "$@"; do
                        (( i * 16384 < $(stat -c %s "$TMP/copies/${f##*/}") )) || continue
                        dd if="$TMP/copies/${f##*/}" of="$f" bs=16K skip="$i" count=1 oflag=append \
                                conv=notrunc,fsync status=none
                        dd if=/dev/zero of="$MNT/filler/$i-${f##*/}" bs=16K count=1 conv=fsync status=none
                        wrote=1
                done
                [ "$wrote" = 1 ] || break
        done
        rm -r "$MNT/filler" "$TMP/copies"
        sync
}

# --- an optimization, so that the next one waits for MinIntervalHours=24 ---
conf 1h
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
setup_aged_profile 13 20 256
mapfile -t order < <(profile_paths "$P")
mapfile -t aged_files < <(printf '%s\n' "${order[@]}" | grep "/aged/")
checksum_all "$TMP/sums"
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize: $(cat "$TMP/opt.json")"
optimized=$(discontinuities_of "${order[@]}")
[ "$optimized" -le 1 ] || fail "optimize left $optimized discontinuities"
stop_daemon

# --- control: the layout is as the run left it, so nothing starts before MinIntervalHours= ---
conf 2s
start_daemon --filesystem="$MNT"
wait_until 30 checked || fail "no layout check although only MinIntervalHours= held a run back: '$(idle_status)'"
grep -q "Idle: layout check: no profile reads slower" "$DAEMON_LOG" ||
        fail "unexpected check result: $(grep "layout check" "$DAEMON_LOG")"
sleep 11     # one more check period
interval_blocks || fail "status: '$(idle_status)'"
grep -q "Idle: started" "$DAEMON_LOG" && fail "a run started although the layout did not degrade"
[ "$(discontinuities_of "${order[@]}")" = "$optimized" ] || fail "the layout changed"
[ "$(grep -c "Idle: layout check:" "$DAEMON_LOG")" = 1 ] || fail "the layout was checked more than once"
pass "layout unchanged: checked once, no run before MinIntervalHours ('$(idle_status)')"
stop_daemon

# --- the layout degrades: a run starts before MinIntervalHours=, saying why ---
refragment "${aged_files[@]}"
scattered=$(discontinuities_of "${order[@]}")
[ "$scattered" -gt 20 ] || fail "refragmenting did not scatter the files ($scattered discontinuities)"
: > "$DAEMON_LOG"
start_daemon --filesystem="$MNT"
started() { grep -q "Idle: started optimization [0-9]* (layout of an application profile degraded [0-9.]*% since the last run (MaxQualityLossPercent=25))" "$DAEMON_LOG"; }
wait_until 40 started || fail "no run for the degraded layout: '$(idle_status)'; $(grep "Idle:" "$DAEMON_LOG")"
grep -q "Idle: layout check: '$P' reads [0-9.]*% slower (modeled) than after the last run" "$DAEMON_LOG" ||
        fail "the check did not name the profile: $(grep "layout check" "$DAEMON_LOG")"
explained() {
        idle_status | grep -qx "optimizing (started when idle: layout of an application profile degraded [0-9.]*% since the last run (MaxQualityLossPercent=25))"
}
wait_until 10 explained || not_optimizing || fail "status does not say why the run started: '$(idle_status)'"
wait_until 120 not_optimizing || fail "the run did not finish"
after=$(discontinuities_of "${order[@]}")
[ "$after" -le 1 ] || fail "run for the degraded layout: $scattered -> $after discontinuities"
verify_checksums "$TMP/sums"
pass "layout degraded: run started before MinIntervalHours ($(grep -o "degraded [0-9.]*%" "$DAEMON_LOG" | head -n1)), $scattered -> $after discontinuities, data intact"

# the run's own "after" snapshot is the new reference: no further run, no check within the hour
wait_until 20 interval_blocks || fail "status after the run: '$(idle_status)'"
sleep 11
[ "$(grep -c "Idle: started optimization" "$DAEMON_LOG")" = 1 ] || fail "another run started"
[ "$(grep -c "Idle: layout check:" "$DAEMON_LOG")" = 1 ] || fail "the layout was checked again within the hour"
pass "after the run: back to waiting for MinIntervalHours"
stop_daemon
fsck_clean
