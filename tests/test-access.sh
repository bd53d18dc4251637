#!/bin/bash
# A non-root caller can read status but gets access denied for show/forget; errors are typed.
. "$(dirname "$0")/lib.sh"

setup_image
start_bus
start_daemon --filesystem="$MNT"
chmod 755 "$TMP"

as_nobody "$SEEKLESSCTL" status > "$TMP/status.out" || fail "non-root status failed"
grep -q "Version:" "$TMP/status.out" || fail "status output lacks Version"
as_nobody "$SEEKLESSCTL" --json status | jq -e '.version and (.filesystems | length == 1)' >/dev/null ||
        fail "non-root status --json"
pass "non-root may read status"

for args in "show boot" "profiles" "sessions" "forget boot" "forget --all" "plan" "optimize" "optimize --when-idle" \
            "cancel" "report"; do
        rc=0
        out=$(as_nobody "$SEEKLESSCTL" $args 2>&1) || rc=$?
        [ "$rc" = 1 ] || fail "non-root '$args' exited $rc"
        grep -q "Permission denied" <<<"$out" || fail "non-root '$args': $out"
done
# busctl prints only a generic text for AccessDenied; dbus-send prints the error name and our message
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfile string:boot 2>&1) && fail "GetProfile allowed for non-root"
grep -q "org.freedesktop.DBus.Error.AccessDenied: Only root may" <<<"$out" || fail "unexpected error: $out"
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfileRanges string:boot 2>&1) && fail "GetProfileRanges allowed for non-root"
grep -q "org.freedesktop.DBus.Error.AccessDenied: Only root may" <<<"$out" || fail "unexpected error: $out"
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfileMetadata string:boot 2>&1) && fail "GetProfileMetadata allowed for non-root"
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
        org.seekless.Seekless1.Manager.GetProfileRanges string:/no/such 2>&1) && fail "dbus-send succeeded"
grep -q "org.seekless.Seekless1.Error.NoSuchProfile" <<<"$out" || fail "untyped error: $out"
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.GetProfile string:relative 2>&1) && fail "dbus-send succeeded"
grep -q "org.freedesktop.DBus.Error.InvalidArgs" <<<"$out" || fail "untyped error: $out"
out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.ForgetAll 2>&1) && fail "dbus-send succeeded"
grep -q "org.freedesktop.DBus.Error.AccessDenied" <<<"$out" || fail "untyped error: $out"
# the idle queue: root only (the daemon's own refusal, with its reason), and nothing got queued
for call in "OptimizeWhenIdle array:string:" "CancelQueued"; do
        out=$(as_nobody dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager.$call 2>&1) && fail "non-root $call succeeded"
        grep -q "org.freedesktop.DBus.Error.AccessDenied: Only root may" <<<"$out" || fail "non-root $call: $out"
done
[ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        QueuedOptimization)" = "(tas) 0 0" ] || fail "a refused request got queued"
# bad mount points for OptimizeWhenIdle: typed, and nothing queued
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.OptimizeWhenIdle array:string:relative/mnt 2>&1) && fail "relative mount accepted"
grep -q "org.freedesktop.DBus.Error.InvalidArgs" <<<"$out" || fail "untyped error for a relative mount: $out"
out=$(dbus-send --system --print-reply --dest=org.seekless.Seekless1 /org/seekless/Seekless1 \
        org.seekless.Seekless1.Manager.OptimizeWhenIdle array:string:/no/such/mount 2>&1) && fail "unwatched mount accepted"
grep -q "org.seekless.Seekless1.Error.NotWatched: '/no/such/mount' is not a watched" <<<"$out" ||
        fail "untyped error for an unwatched mount: $out"
[ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager \
        QueuedOptimization)" = "(tas) 0 0" ] || fail "a bad request got queued"
rc=0; out=$(ctl optimize --when-idle /no/such/mount 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "not a watched" <<<"$out" || fail "optimize --when-idle /no/such/mount: $rc: $out"
rc=0; out=$(ctl optimize --when-idle --dry-run 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "--when-idle --dry-run exited $rc: $out"
rc=0; out=$(ctl plan --when-idle 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "plan --when-idle exited $rc: $out"
# the bus policy itself: nobody may not own the name
out=$(as_nobody dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.RequestName string:org.seekless.Seekless1 uint32:0 2>&1) && fail "nobody could own the name"
pass "errors are typed"
stop_daemon
