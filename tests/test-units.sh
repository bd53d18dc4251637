#!/bin/bash
# The systemd unit is valid (systemd-analyze verify, offline), what meson installs is complete (unit, D-Bus
# policy, activation file naming the unit's alias, interface XML, man pages), and the unit keeps the
# capabilities the daemon needs (test-optimize-refusals runs the daemon with exactly this set).
set -euo pipefail
: "${BUILD_ROOT:?run through meson test}" "${SOURCE_ROOT:?}"
TMP=$(mktemp -d /tmp/seekless-test-units.XXXXXX)
. "$SOURCE_ROOT/tests/scratch.sh" && scratch_claim "$TMP"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
for u in seeklessd.service seekless-early.service; do
        sed "s|@sbindir@|$BUILD_ROOT/daemon|" "$SOURCE_ROOT/units/$u.in" > "$TMP/$u"
done
systemd-analyze verify --man=no "$TMP/seeklessd.service" "$TMP/seekless-early.service" || fail "systemd-analyze verify"
echo "ok: systemd-analyze verify clean"

# the build's prefix: /usr/local by default, /usr in the Debian package's build (dh_auto_test)
P=$(meson introspect --buildoptions "$BUILD_ROOT" |
        python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix").strip("/"))')
DESTDIR="$TMP/root" meson install -C "$BUILD_ROOT" --quiet --no-rebuild
for f in $P/sbin/seeklessd $P/bin/seeklessctl \
         $P/share/dbus-1/system.d/org.seekless.Seekless1.conf \
         $P/share/dbus-1/system-services/org.seekless.Seekless1.service \
         $P/share/dbus-1/interfaces/org.seekless.Seekless1.xml; do
        [ -e "$TMP/root/$f" ] || fail "meson install did not install /$f"
done
find "$TMP/root" -name seeklessd.service | grep -q . || fail "no unit installed"
find "$TMP/root" -name seekless-early.service | grep -q . || fail "no early-boot unit installed"
find "$TMP/root" -name 'seeklessd.8' | grep -q . || fail "no man page installed"
alias=$(sed -n 's/^Alias=//p' "$SOURCE_ROOT/units/seeklessd.service.in")
grep -q "^SystemdService=$alias$" "$TMP/root/$P/share/dbus-1/system-services/org.seekless.Seekless1.service" ||
        fail "activation file does not name the unit's alias $alias"
grep -q "^PrivateNetwork=" "$SOURCE_ROOT/units/seeklessd.service.in" &&
        fail "PrivateNetwork= would cut the daemon off the process-events connector"
echo "ok: meson install ships unit, policy, activation file ($alias), interface XML, man pages"
