#!/bin/bash
# dbus/org.seekless.Seekless1.xml is the documented contract: the running daemon must match it exactly
# (every method with its in/out signatures, every property with type and access, every signal).
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
                ins = ""; outs = ""; sig = ""
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
        /<\/(method|signal)>/ { flush() }
        function flush() {
                if (cur == "") return
                if (cur == "property") print cur, name, sig
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
stop_daemon
