#!/bin/bash
# The boot collector (seekless-boot-collector, a generator at boot) records the reads made before seeklessd
# starts; seeklessd stops it and opens the boot session with them, in the order of their first read (a file
# only mapped, never read(), counts at its close, as ld.so maps /etc/ld.so.cache). Reads
# by a process named seeklessd (the early pass, the daemon itself) are left out. Bad input: a keys file that
# is not complete adds nothing and is removed; a stale pid file naming another process gets no signal; a
# second collector in the same boot does not start; the collector stops by itself at --timeout=.
# A seeklessd process lists its pid in boot-collector.exclude, so that its reads are left out even when it
# has exited before the collector takes them from the queue (as the short-lived early pass does; the
# collector is stopped with SIGSTOP to make that happen every time).
. "$(dirname "$0")/lib.sh"
: "${BOOT_COLLECTOR:?run through meson test}" "${PAGE_TOUCH:?}"

setup_image
mkdir -p "$MNT/units" "$MNT/other" "$TMP/bin"
for f in u1 u2 u3 u4 u5 m; do echo "$f" > "$MNT/units/$f"; done
echo x > "$MNT/other/x"
echo y > "$MNT/other/y"
cp /bin/cat "$TMP/bin/seeklessd"        # a process that has the daemon's name (run from off the image)
mkfifo "$TMP/fifo"

collector_pid() { cat "$RUN_DIR/boot-collector.pid"; }
start_collector() {
        "$BOOT_COLLECTOR" --run-dir="$RUN_DIR" --watch="$MNT" "$@" || fail "collector exited with $?"
        [ -s "$RUN_DIR/boot-collector.pid" ] || fail "collector wrote no pid file"
        EXTRA_PIDS+=("$(collector_pid)")
        [ "$(cat /proc/"$(collector_pid)"/comm)" = seekless-boot-c ] || fail "pid file does not name the collector"
}

start_collector --timeout=120
pid=$(collector_pid)
"$BOOT_COLLECTOR" --run-dir="$RUN_DIR" --watch="$MNT" || fail "second collector failed"
# counted by this test's run directory: another suite running on the machine has collectors of its own
[ "$(collector_pid)" = "$pid" ] && [ "$(pgrep -c -f -- "--run-dir=$RUN_DIR ")" = 1 ] ||
        fail "a second collector started in the same boot"
pass "one collector per boot (the pid file stays the first one's)"

[ -e "$RUN_DIR/boot-collector.exclude" ] || fail "the collector did not create its exclude file"
cat "$MNT/units/u3" "$MNT/units/u1" > /dev/null
"$PAGE_TOUCH" map:"$MNT/units/m" || fail "mapping failed"
# the real seeklessd reads other/x (as its config) and exits while the collector is stopped
kill -STOP "$pid"
"$SEEKLESSD" --early-pass --config="$MNT/other/x" --state-dir="$TMP/early-state" --run-dir="$RUN_DIR" \
        > "$TMP/early.log" 2>&1 || { kill -CONT "$pid"; fail "early pass failed: $(cat "$TMP/early.log")"; }
kill -CONT "$pid"
[ "$(wc -l < "$RUN_DIR/boot-collector.exclude")" = 1 ] ||
        fail "seeklessd did not list its pid: [$(cat "$RUN_DIR/boot-collector.exclude")]"
# a process named seeklessd that runs until the collector has stopped reads other/y
# (it waits on a fifo held open by a sleep, so that no process the test starts later inherits the fifo)
"$TMP/bin/seeklessd" "$MNT/other/y" - < "$TMP/fifo" > /dev/null &
namesake=$!
sleep 600 > "$TMP/fifo" &
holder=$!
EXTRA_PIDS+=("$namesake" "$holder")
cat "$MNT/units/u5" "$MNT/units/u1" > /dev/null
# as systemd-remount-fs does at boot, after PID 1 read its units: the remount drops the unused dentries,
# and a handle opened after it can't be named; the collector named the files right after their reads
mount -o remount,ro "$MNT"
mount -o remount,rw "$MNT"
start_bus
write_config <<EOC
[Record]
BootWindowSec=5
EOC
start_daemon --filesystem="$MNT" --boot-id=0123456789abcdef0123456789abcdef
wait_pid_gone "$pid" 5 || fail "seeklessd did not stop the collector"
kill -0 "$namesake" || fail "the process named seeklessd exited before the collector stopped"
kill "$namesake" "$holder"
[ ! -e "$RUN_DIR/boot-collector.pid" ] && [ ! -e "$RUN_DIR/boot-collector.keys" ] &&
        [ ! -e "$RUN_DIR/boot-collector.exclude" ] || fail "collector files left behind: $(ls "$RUN_DIR")"
cat "$MNT/units/u2" > /dev/null
wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 30 has_profile boot || fail "boot profile not stored"
got=$(profile_paths boot | tr '\n' ' ')
want="$MNT/units/u3 $MNT/units/u1 $MNT/units/m $MNT/units/u5 $MNT/units/u2 "
[ "$got" = "$want" ] || fail "boot profile: got [$got], want [$want]"
grep -q "Boot session starts with 4 files the boot read before seeklessd started" "$DAEMON_LOG" ||
        fail "the daemon did not say what it took from the collector"
pass "the boot session opens with the collector's reads in first-read order, then the daemon's own; an exited seeklessd's reads and a running one's are left out"
stop_daemon
"$BOOT_COLLECTOR" --run-dir="$RUN_DIR" --watch="$MNT" || fail "collector failed after the first one stopped"
[ ! -e "$RUN_DIR/boot-collector.pid" ] || fail "a collector started again in the same boot (as on daemon-reload)"
pass "no second collector in the same boot after the first one stopped"

rm "$RUN_DIR/boot-collector.started"    # a new boot (/run starts empty)

# stops by itself at --timeout=, and its file is whole
start_collector --timeout=1
pid=$(collector_pid)
cat "$MNT/units/u4" > /dev/null
wait_pid_gone "$pid" 10 || fail "collector did not stop at its timeout"
[ "$(head -n1 "$RUN_DIR/boot-collector.keys")" = "seekless-boot-collector 1" ] &&
        [ "$(tail -n1 "$RUN_DIR/boot-collector.keys")" = "end 1" ] ||
        fail "keys file after the timeout: $(cat "$RUN_DIR/boot-collector.keys")"
pass "the collector stops at its timeout and leaves a complete keys file (1 file)"

# a keys file cut short adds nothing and is removed
head -n2 "$RUN_DIR/boot-collector.keys" > "$RUN_DIR/cut" && mv "$RUN_DIR/cut" "$RUN_DIR/boot-collector.keys"
# a stale pid file naming another process: that process must get no signal
sleep 300 &
bystander=$!
EXTRA_PIDS+=("$bystander")
echo "$bystander" > "$RUN_DIR/boot-collector.pid"
start_daemon --filesystem="$MNT" --boot-id=fedcba9876543210fedcba9876543210
grep -q "boot-collector.keys is not a complete boot collector file, ignored" "$DAEMON_LOG" ||
        fail "no warning for the cut keys file"
[ ! -e "$RUN_DIR/boot-collector.keys" ] || fail "the cut keys file was left in place"
kill -0 "$bystander" || fail "seeklessd signalled a process that is not the collector"
busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        BootRecording | grep -q true || fail "no boot session after a bad keys file"
pass "a keys file cut short is reported and removed; a stale pid file's process is left alone"
cat "$MNT/units/u5" > /dev/null         # an empty session is not stored
wait_until 60 boot_recording_over || fail "second boot window did not close"
wait_until 30 sh -c "[ \"\$('$SEEKLESSCTL' --json=short sessions | jq '[.[] | select(.kind == \"boot\")] | length')\" = 2 ]" ||
        fail "second boot session not stored"
[ "$(ctl --json=short sessions | jq '[.[] | select(.kind == "boot")] | length')" = 2 ] ||
        fail "expected 2 boot sessions: $(ctl --json=short sessions)"
! profile_paths boot | grep -q "$MNT/units/u4" || fail "a file from the cut keys file is in the boot profile"
pass "nothing from the cut file reached the profile"
stop_daemon

# As a generator (three directory arguments) it starts only when seeklessd.service is enabled: on this
# machine (no such link) it must exit at once without collecting.
if [ ! -e /etc/systemd/system/sysinit.target.wants/seeklessd.service ] && [ ! -e /run/seekless ]; then
        "$BOOT_COLLECTOR" "$TMP/g1" "$TMP/g2" "$TMP/g3" || fail "generator mode failed"
        # a collector it started would be its fork, with its command line (another suite's are not)
        ! pgrep -f -- "$TMP/g1 " >/dev/null && [ ! -e /run/seekless ] ||
                fail "the generator collected although seeklessd.service is not enabled"
        pass "as a generator it does nothing while seeklessd.service is not enabled"
fi
