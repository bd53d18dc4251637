#!/bin/bash
# A non-root caller can read status but gets access denied for show/forget; errors are typed.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
start_daemon --filesystem="$MNT"
chmod 755 "$TMP"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

as_nobody "$SEEKLESSCTL" status > "$TMP/status.out" || fail "non-root status failed"
grep -q "Version:" "$TMP/status.out" || fail "status output lacks Version"
as_nobody "$SEEKLESSCTL" --json status | jq -e '.version and (.filesystems | length == 1)' >/dev/null ||
        fail "non-root status --json"
pass "non-root may read status"

for args in "show boot" "profiles" "sessions" "forget boot" "forget --all" "plan" "optimize" "cancel" "report"; do
        rc=0
        out=$(as_nobody "$SEEKLESSCTL" $args 2>&1) || rc=$?
        [ "$rc" = 1 ] || fail "non-root '$args' exited $rc"
        grep -q "Permission denied" <<<"$out" || fail "non-root '$args': $out"
done
# busctl prints only a generic text for AccessDenied; dbus-send prints the error name and our message
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfile string:boot 2>&1) && fail "GetProfile allowed for non-root"
grep -q "org.freedesktop.DBus.Error.AccessDenied: Only root may" <<<"$out" || fail "unexpected error: $out"
pass "non-root gets access denied for paths"

out=$(busctl --system call org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager GetProfile s /no/such/program 2>&1) && fail "missing profile returned"
grep -q "No profile named" <<<"$out" || fail "unexpected error for missing profile: $out"
out=$(busctl --system call org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager ForgetProfile s relative/name 2>&1) && fail "relative name accepted"
grep -q "Invalid profile name" <<<"$out" || fail "unexpected error for a bad name: $out"
# the error *names* (busctl prints only messages): ask with dbus-send, which prints the name
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfile string:/no/such 2>&1) && fail "dbus-send succeeded"
grep -q "org.seekless.Seekless1.Error.NoSuchProfile" <<<"$out" || fail "untyped error: $out"
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfile string:relative 2>&1) && fail "dbus-send succeeded"
grep -q "org.freedesktop.DBus.Error.InvalidArgs" <<<"$out" || fail "untyped error: $out"
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.ForgetAll 2>&1) && fail "dbus-send succeeded"
grep -q "org.freedesktop.DBus.Error.AccessDenied" <<<"$out" || fail "untyped error: $out"
# the bus policy itself: nobody may not own the name
out=$(as_nobody dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.RequestName string:org.seekless.Seekless1 uint32:0 2>&1) && fail "nobody could own the name"
pass "errors are typed"
stop_daemon
