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

rc=0; out=$(ctl frobnicate 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "unknown verb exited $rc"
pass "usage errors exit 2"
