#!/bin/bash
# Two seeklessd on one state directory: the second exits at once with a clear message and changes nothing,
# with or without a bus (early in the boot there is none; the code before then ran both, each recording
# every launch). The early pass is refused the same way while the daemon runs.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=2
EOC
make_small_launch
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
sessions() { ctl --json=short sessions | jq length; }
before=$(sessions)

for mode in "no bus" "the bus" "early pass"; do
        args=() env=()
        case $mode in
        "no bus") env=(DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent) ;;
        "early pass") args=(--early-pass) ;;
        esac
        rc=0
        env "${env[@]}" timeout 10 "$SEEKLESSD" --config="$CONF" --state-dir="$STATE" --run-dir="$RUN_DIR" \
                --filesystem="$MNT" "${args[@]}" > "$TMP/second.log" 2>&1 || rc=$?
        [ "$rc" = 1 ] || fail "second seeklessd ($mode): exit status $rc: $(cat "$TMP/second.log")"
        grep -q "Another seeklessd is using the state directory $STATE; exiting" "$TMP/second.log" ||
                fail "second seeklessd ($mode): $(cat "$TMP/second.log")"
        pass "a second seeklessd ($mode) exits at once: '$(tail -n 1 "$TMP/second.log")'"
done

"$MNT/bin/prog" "$MNT/d/x" "$MNT/d/y"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"
sleep 3
[ "$(sessions)" = $((before + 1)) ] || fail "one launch gave $(( $(sessions) - before )) sessions"
pass "one launch, one session"
stop_daemon
