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

DESTDIR="$TMP/root" meson install -C "$BUILD_ROOT" --quiet --no-rebuild
for f in usr/local/sbin/seeklessd usr/local/bin/seeklessctl \
         usr/local/share/dbus-1/system.d/org.seekless.Seekless1.conf \
         usr/local/share/dbus-1/system-services/org.seekless.Seekless1.service \
         usr/local/share/dbus-1/interfaces/org.seekless.Seekless1.xml; do
        [ -e "$TMP/root/$f" ] || fail "meson install did not install /$f"
done
find "$TMP/root" -name seeklessd.service | grep -q . || fail "no unit installed"
find "$TMP/root" -name seekless-early.service | grep -q . || fail "no early-boot unit installed"
find "$TMP/root" -name 'seeklessd.8' | grep -q . || fail "no man page installed"
alias=$(sed -n 's/^Alias=//p' "$SOURCE_ROOT/units/seeklessd.service.in")
grep -q "^SystemdService=$alias$" "$TMP/root/usr/local/share/dbus-1/system-services/org.seekless.Seekless1.service" ||
        fail "activation file does not name the unit's alias $alias"
grep -q "^PrivateNetwork=" "$SOURCE_ROOT/units/seeklessd.service.in" &&
        fail "PrivateNetwork= would cut the daemon off the process-events connector"
echo "ok: meson install ships unit, policy, activation file ($alias), interface XML, man pages"
