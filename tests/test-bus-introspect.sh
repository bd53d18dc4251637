#!/bin/bash
# dbus/org.seekless.Seekless1.xml is the documented contract: the running daemon must match it exactly
# (every method with its in/out signatures, every property with type, access and whether it emits
# PropertiesChanged, every signal). Then: a change of state is announced with PropertiesChanged.
. "$(dirname "$0")/lib.sh"

start_bus
setup_image
start_daemon --filesystem="$MNT"

# Reduce introspection XML of the Manager interface to sorted "kind name signature" lines.
members() {
        awk '
        /<interface name="org.seekless.Seekless1.Manager"/ { inside = 1; next }
        inside && /<\/interface>/ { inside = 0 }
        !inside { next }
        match($0, /<(method|signal|property) name="[^"]*"/) {
                flush()
                kind = $0; sub(/.*</, "", kind); sub(/ .*/, "", kind)
                name = $0; sub(/.*name="/, "", name); sub(/".*/, "", name)
                ins = ""; outs = ""; sig = ""; emits = "true"
                if (kind == "property") {
                        t = $0; sub(/.*type="/, "", t); sub(/".*/, "", t)
                        a = $0; sub(/.*access="/, "", a); sub(/".*/, "", a)
                        sig = t " " a
                }
                cur = kind
                if ($0 ~ /\/>/ ) flush()
                next
        }
        /<arg / {
                t = $0; sub(/.*type="/, "", t); sub(/".*/, "", t)
                if (cur == "signal" || $0 ~ /direction="in"/) ins = ins t; else outs = outs t
                next
        }
        /EmitsChangedSignal/ { e = $0; sub(/.*value="/, "", e); sub(/".*/, "", e); emits = e; next }
        /<\/(method|signal|property)>/ { flush() }
        function flush() {
                if (cur == "") return
                if (cur == "property") print cur, name, sig, "emits=" emits
                else print cur, name, "in=" ins, "out=" outs
                cur = ""
        }
        ' | sort
}

members < "$SOURCE_ROOT/dbus/org.seekless.Seekless1.xml" > "$TMP/documented"
busctl --system introspect --xml-interface org.seekless.Seekless1 /org/seekless/Seekless1 | members > "$TMP/live"
[ -s "$TMP/documented" ] || fail "parsed nothing from the XML"
diff -u "$TMP/documented" "$TMP/live" || fail "daemon and dbus/org.seekless.Seekless1.xml disagree"
pass "$(wc -l < "$TMP/live") members match the documented interface"

# PropertiesChanged as any user receives it: queueing an optimization changes QueuedOptimization and
# IdleStatus, dropping it changes them back
as_nobody "$BUS_LISTEN" 20 org.freedesktop.DBus.Properties > "$TMP/changes" 2>&1 &
EXTRA_PIDS+=($!)
wait_until 10 grep -q '^ready' "$TMP/changes" || fail "listener: $(cat "$TMP/changes")"
ctl --json=short optimize --when-idle > /dev/null || fail "optimize --when-idle"
wait_until 10 grep -q "^PropertiesChanged org.seekless.Seekless1.Manager.*QueuedOptimization" "$TMP/changes" ||
        fail "no PropertiesChanged for QueuedOptimization: $(cat "$TMP/changes")"
ctl cancel > /dev/null || fail "cancel"
wait_until 10 [ "$(grep -c "QueuedOptimization" "$TMP/changes")" -ge 2 ] ||
        fail "no PropertiesChanged when the request was dropped: $(cat "$TMP/changes")"
pass "PropertiesChanged: $(grep -c ^PropertiesChanged "$TMP/changes") signal(s) for queueing and dropping a request"
stop_daemon
