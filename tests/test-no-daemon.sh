#!/bin/bash
# Without a daemon, commands fail with one line saying so and a non-zero exit.
. "$(dirname "$0")/lib.sh"

start_bus
for args in status profiles "show boot" sessions "forget --all" "--json status"; do
        rc=0
        out=$(ctl $args 2>&1) || rc=$?
        [ "$rc" = 1 ] || fail "'$args' exited $rc"
        [ "$(wc -l <<<"$out")" = 1 ] || fail "'$args' printed more than one line: $out"
        grep -q "seeklessd is not running" <<<"$out" || fail "'$args': $out"
done
pass "no daemon on the bus"

kill "$BUS_PID"; BUS_PID=
rc=0
out=$(ctl status 2>&1) || rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] || fail "no bus: exit $rc: $out"
pass "no bus at all: $out"

# a tcp: bus connects in the background: its failure is told the same way, at connect time
for addr in "tcp:host=127.0.0.1,port=1" "unix:path=/nonexistent/bus"; do
        rc=0
        out=$(DBUS_SYSTEM_BUS_ADDRESS=$addr ctl status 2>&1) || rc=$?
        [ "$rc" = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] || fail "$addr: exit $rc: $out"
        grep -qF "seeklessd is not running (cannot connect to the system bus at $addr:" <<<"$out" || fail "$addr: $out"
done
pass "unreachable bus addresses: $out"

rc=0; out=$(ctl frobnicate 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "unknown verb exited $rc"
pass "usage errors exit 2"
