#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the Debian package (dpkg-buildpackage -us -uc -b) of a checkout's tracked files as they are in the
# work tree, plus new files not ignored yet (a build directory is), and copy the results (.deb, the dbgsym
# .deb, .buildinfo, .changes) to DEST_DIR. The build is kept in CACHE_DIR under a key made of those files'
# names, modes and contents and of the installed packages' versions (the toolchain), so the VM suite's
# image and the package suite share one build per state of the sources instead of building twice.
#   usage: build-deb.sh SOURCE_ROOT CACHE_DIR DEST_DIR
# Prints "built ..." or "reused ..."; on a failed build, the end of dpkg-buildpackage's log.
set -euo pipefail
usage="usage: build-deb.sh SOURCE_ROOT CACHE_DIR DEST_DIR"
S=$(realpath "${1:?$usage}")
C=${2:?$usage}
DEST=${3:?$usage}
git -C "$S" rev-parse --git-dir >/dev/null 2>&1 || { echo "build-deb.sh: $S is not a git checkout" >&2; exit 1; }
mkdir -p "$C" "$DEST"
C=$(realpath "$C")

list=$(mktemp)
trap 'rm -f "$list"' EXIT
git -C "$S" ls-files -z --cached --others --exclude-standard |
        (cd "$S" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) | sort -z > "$list"
key=$( { (cd "$S" && xargs -0 -r stat -c '%a %n' < "$list" && xargs -0 -r sha256sum -- < "$list")
         dpkg-query -W -f '${Package} ${Version}\n'; } | sha256sum | cut -c1-16)

exec 8>"$C/.lock"
flock 8                         # one build at a time; readers copy out under the same lock
K=$C/$key
if [ -e "$K/.done" ]; then
        echo "build-deb: reused the package built $(( ($(date +%s) - $(stat -c %Y "$K/.done")) / 60 )) min ago for the same sources ($K)"
else
        t0=$SECONDS
        rm -rf "$K.tmp"
        mkdir -p "$K.tmp/seekless"
        tar -C "$S" --null -T "$list" -c | tar -C "$K.tmp/seekless" -x
        # the package's own unit tests run in CI already (suite unit): nocheck
        if ! (cd "$K.tmp/seekless" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
                > "$K.tmp/build.log" 2>&1; then
                tail -n 40 "$K.tmp/build.log" >&2
                echo "build-deb: dpkg-buildpackage -us -uc -b failed (log: $K.tmp/build.log)" >&2
                exit 1
        fi
        rm -rf "$K.tmp/seekless"
        # only the newest build is kept: the others are of sources that have changed since
        find "$C" -mindepth 1 -maxdepth 1 -type d ! -name "$key.tmp" -exec rm -rf {} +
        mv "$K.tmp" "$K"
        touch "$K/.done"
        echo "build-deb: built $(cd "$K" && ls ./*.deb | sed 's|^\./||' | tr '\n' ' ')in $((SECONDS - t0)) s ($K)"
fi
cp "$K"/*.deb "$K"/*.buildinfo "$K"/*.changes "$DEST/"
