#!/bin/bash
# Configure and build the project for the guest in its own build dir, WORK_DIR/build-guest, the way a
# distribution package would: prefix /usr, units in /usr/lib/systemd/system, the bus policy in
# /usr/share/dbus-1/system.d (where PID 1 and dbus-daemon look; a /usr/local prefix would put the units
# where systemd never reads them). Only what `meson install` installs is built.
#   usage: build-guest.sh SOURCE_ROOT WORK_DIR
set -euo pipefail
S=$(realpath "${1:?usage: build-guest.sh SOURCE_ROOT WORK_DIR}")
W=${2:?usage: build-guest.sh SOURCE_ROOT WORK_DIR}
B=$W/build-guest
# a build dir belongs to one source tree: start over if it was made from another one
if [ -e "$B/build.ninja" ] && [ "$(cat "$B/.source-root" 2>/dev/null)" != "$S" ]; then
        rm -rf "$B"
fi
if [ ! -e "$B/build.ninja" ]; then
        rm -rf "$B"
        meson setup "$B" "$S" --prefix=/usr --buildtype=debugoptimized -Dman=disabled \
                -Dsystemd_unit_dir=/usr/lib/systemd/system -Ddbus_policy_dir=/usr/share/dbus-1/system.d >/dev/null
        echo "$S" >"$B/.source-root"
fi
# Build only the targets that get installed (not the tests and benchmarks).
mapfile -t targets < <(meson introspect "$B" --targets |
        python3 -c 'import json, os, sys
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]: print(os.path.relpath(f, sys.argv[1]))' "$(realpath "$B")")
ninja -C "$B" "${targets[@]}" >"$W/build-guest.log" 2>&1 || { tail -n 40 "$W/build-guest.log" >&2; exit 1; }
echo "build-guest: built ${targets[*]}"
