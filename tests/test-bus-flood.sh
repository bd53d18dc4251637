#!/bin/bash
# One D-Bus message must not stall the daemon: the caller's privilege is checked before any argument is
# parsed (as nobody, Plan/Optimize/OptimizeWhenIdle with 800,000 mount points, a 6.4 MB message, are denied
# at once; the code before parsed them first, in quadratic time: 150 s for this message), and a root
# caller's mount list is read linearly and bounded (more than 256 entries: InvalidArgs, unread).
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
start_daemon --filesystem="$MNT"
chmod 755 "$TMP"

for method in Plan Optimize OptimizeWhenIdle; do
        out=$(as_nobody "$BUS_CALL_MANY" "$method" 800000) || fail "$method with 800000 mount points as nobody: no answer"
        read -r name secs <<< "$out"
        [ "$name" = org.freedesktop.DBus.Error.AccessDenied ] || fail "$method as nobody: $out"
        awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "$method as nobody took $secs s to be denied"
        echo "  $method, 800000 mount points, as nobody: $name in $secs s"
done
timeout 5 "$SEEKLESSCTL" status >/dev/null || fail "status did not answer after the flood"
pass "unprivileged callers are denied before their arguments are read"

out=$("$BUS_CALL_MANY" Plan 257) || fail "Plan with 257 mount points: no answer"
[ "${out%% *}" = org.freedesktop.DBus.Error.InvalidArgs ] || fail "Plan with 257 mount points as root: $out"
out=$("$BUS_CALL_MANY" Plan 800000 2>"$TMP/err") || fail "Plan with 800000 mount points as root: no answer"
[ "${out%% *}" = org.freedesktop.DBus.Error.InvalidArgs ] || fail "Plan with 800000 mount points as root: $out"
grep -q "Too many mount points: at most 256" "$TMP/err" || fail "unclear error: $(cat "$TMP/err")"
echo "  Plan, 800000 mount points, as root: $out ($(cat "$TMP/err"))"
out=$("$BUS_CALL_MANY" Plan 256 "$MNT") || fail "Plan with 256 mount points: no answer"
[ "${out%% *}" = ok ] || fail "Plan with 256 copies of the watched mount as root: $out"
pass "a root caller's mount list is bounded (256), longer ones refused with InvalidArgs"
