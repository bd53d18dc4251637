#!/bin/bash
# Signals: SIGPIPE, SIGUSR1 and SIGUSR2 are ignored (the code before died of each without saving the open
# sessions); SIGHUP reads the configuration again (systemctl reload), with the usual file:line warnings,
# and the new values apply from then on; SIGTERM still stops the daemon cleanly.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
MinLaunchFiles=50
EOC
make_small_launch
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"

for sig in PIPE USR1 USR2; do
        kill -s "$sig" "$DAEMON_PID"
        sleep 0.5
        kill -0 "$DAEMON_PID" 2>/dev/null || fail "seeklessd died of SIG$sig"
        timeout 5 "$SEEKLESSCTL" status >/dev/null || fail "seeklessd does not answer after SIG$sig"
done
pass "SIGPIPE, SIGUSR1, SIGUSR2: ignored"

"$MNT/bin/prog" "$MNT/d/x" "$MNT/d/y"
sleep 4
has_profile "$MNT/bin/prog" && fail "a launch of 2 files was stored with MinLaunchFiles=50"
cat > "$CONF" <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
MinLaunchFiles=2
Bogus=1
EOC
kill -HUP "$DAEMON_PID"
wait_until 10 grep -q "Configuration reloaded from $CONF" "$DAEMON_LOG" || fail "no reload logged"
grep -q "$CONF:5: Unknown key 'Bogus'" "$DAEMON_LOG" || fail "the reloaded file's warning is missing"
"$MNT/bin/prog" "$MNT/d/x" "$MNT/d/y"
wait_until 30 has_profile "$MNT/bin/prog" || fail "after SIGHUP, MinLaunchFiles=2 did not apply"
pass "SIGHUP: configuration reloaded (warnings with file:line), the new MinLaunchFiles= applies"
stop_daemon
pass "SIGTERM: clean stop"
