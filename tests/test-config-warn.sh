#!/bin/bash
# Bad configuration lines warn with file:line and are ignored; the good lines around them still apply.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
write_config <<EOC
# a comment
[Record]
BootWindowSec=2
LaunchWindowSec=ten
NoSuchKey=1
MaxLaunchesPerBoot=-3
this line has no equals sign
[Bogus]
Whatever=1
EOC
mkdir -p "$TMP/seekless.conf.d"
printf '[Record]\nKeepBoots=0\n' > "$TMP/seekless.conf.d/50-bad.conf"
start_daemon --filesystem="$MNT"

grep -q "seekless.conf:4: .*LaunchWindowSec.*ignoring" "$DAEMON_LOG" || fail "no file:line warning for LaunchWindowSec"
grep -q "seekless.conf:5: .*NoSuchKey.*ignoring" "$DAEMON_LOG" || fail "no warning for unknown key"
grep -q "seekless.conf:6: .*MaxLaunchesPerBoot.*ignoring" "$DAEMON_LOG" || fail "no warning for negative value"
grep -q "seekless.conf:7: .*ignoring" "$DAEMON_LOG" || fail "no warning for a line without '='"
grep -q "seekless.conf:8: .*Bogus.*ignoring" "$DAEMON_LOG" || fail "no warning for unknown section"
grep -q "50-bad.conf:2: .*KeepBoots.*ignoring" "$DAEMON_LOG" || fail "no warning from the drop-in"
pass "each bad line warned with file:line"

# the good line in the same file took effect: the boot window is 2 s, not the default 120 s
wait_until 30 boot_recording_over || fail "BootWindowSec=2 was not applied"
pass "good values still applied"
stop_daemon
