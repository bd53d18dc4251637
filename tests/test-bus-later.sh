#!/bin/bash
# Early in the boot seeklessd starts before the system bus exists: it must start, record, and connect
# once the bus appears -- and reconnect when the bus goes away and comes back -- without losing anything.
. "$(dirname "$0")/lib.sh"

setup_image
mkdir -p "$MNT/in"
for f in a b c; do echo "$f" > "$MNT/in/$f"; done
write_config <<EOC
[Record]
BootWindowSec=6
EOC
# The socket the daemon will look for does not exist yet.
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$TMP/bus/system_bus_socket"
"$SEEKLESSD" --config="$CONF" --state-dir="$STATE" --log-level=debug --filesystem="$MNT" >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
wait_until 20 grep -q "System bus not available yet" "$DAEMON_LOG" || fail "no word about the missing bus"
kill -0 "$DAEMON_PID" || fail "seeklessd exited without a bus"
cat "$MNT/in/c" "$MNT/in/a" "$MNT/in/b" >/dev/null
pass "started without a bus and recording"

start_bus
wait_until 20 busctl --system status org.seekless.Seekless1 >/dev/null || fail "did not connect once the bus appeared"
grep -q "Connected to the system bus" "$DAEMON_LOG" || fail "connection not logged"
wait_until 60 boot_recording_over || fail "boot window did not close"
got=$(profile_paths boot | tr '\n' ' ')
[ "$got" = "$MNT/in/c $MNT/in/a $MNT/in/b " ] || fail "boot profile recorded before the bus: got [$got]"
pass "connected when the bus appeared; reads from before it are in the boot profile in order"

kill "$BUS_PID"; wait_pid_gone "$BUS_PID" 10 || fail "bus did not stop"; BUS_PID=
wait_until 20 grep -q "Lost the system bus connection" "$DAEMON_LOG" || fail "bus loss not noticed"
kill -0 "$DAEMON_PID" || fail "seeklessd exited when the bus went away"
rm -f "$TMP/bus/system_bus_socket"
start_bus
wait_until 20 busctl --system status org.seekless.Seekless1 >/dev/null || fail "did not reconnect to the new bus"
ctl status >/dev/null || fail "status after reconnect"
pass "reconnects after the bus restarts"
stop_daemon
