#!/bin/bash
# Quick start: build seekless, create a scratch ext4 image and age it, start seeklessd on it (with a private
# D-Bus system bus, so nothing on this machine is touched), launch a real program stored on the image
# (Python importing part of its standard library), show the profile seekless recorded, optimize the layout
# and show the layout quality before and after (checked independently with filefrag and sha256sum).
#   usage: tools/demo.sh [BUILD_DIR]     (default: build-demo; run as root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. tools/deps.sh
install_deps

B=${1:-build-demo}
[ -d "$B" ] || meson setup "$B" >/dev/null
ninja -C "$B" >/dev/null
SEEKLESSD=$ROOT/$B/daemon/seeklessd
SEEKLESSCTL=$ROOT/$B/cli/seeklessctl

if [ "$(id -u)" != 0 ]; then
        echo "Run as root: seeklessd needs fanotify and the demo mounts a loop device." >&2
        exit 1
fi

. tests/lib-core.sh
TMP=$(mktemp -d /tmp/seekless-demo.XXXXXX)
. tests/scratch.sh && scratch_claim "$TMP"     # a test suite starting meanwhile leaves it alone
BUS_PID= DAEMON_PID=
cleanup() {
        set +e
        [ -n "$DAEMON_PID" ] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        release_mounts_and_loops
        rm -rf "$TMP"
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }

step "Scratch ext4 image (512 MiB, 4 KiB blocks) on a loop device"
make_ext4_image "$TMP/fs.img" 512M
attach "$TMP/fs.img" 1          # rotational: the disk seekless is for, whatever backs /tmp
LOOP=$ATTACHED MNT=$TMP/mnt
do_mount "$LOOP" "$MNT"
echo "$TMP/fs.img on $LOOP mounted at $MNT"

step "Aging it: interleaved writes and deletions fragment the free space"
bash tools/age-image.sh "$MNT" 5 80 512 | sed 's/^/  /'
# free every other aged file so the program copied next lands in scattered holes
i=0; for f in "$MNT"/aged/f*; do [ $((i++ % 2)) = 0 ] && rm "$f"; done
sync

step "Installing a real program on it: Python $(python3 -c 'import sys; print(sys.version.split()[0])') and its standard library"
PYVER=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
PYBIN=$(readlink -f "/usr/bin/python$PYVER")
mkdir -p "$MNT/usr/bin" "$MNT/usr/lib"
cp "$PYBIN" "$MNT/usr/bin/python$PYVER"
cp -a "/usr/lib/python$PYVER" "$MNT/usr/lib/"
sync
du -sh "$MNT/usr" | sed 's/^/  /'

step "Private D-Bus system bus and seeklessd"
. tests/private-bus.sh
start_private_bus "$TMP/bus" "$ROOT"
# MinFileAgeSec=0: the program was copied a moment ago (the default waits 10 minutes for files to settle)
printf '[Record]\nBootWindowSec=3\nLaunchWindowSec=5\n[Optimize]\nMinFileAgeSec=0\n' > "$TMP/seekless.conf"
"$SEEKLESSD" --config="$TMP/seekless.conf" --state-dir="$TMP/state" --filesystem="$MNT" 2>"$TMP/daemon.log" &
DAEMON_PID=$!
wait_until 10 "$SEEKLESSCTL" status || true
"$SEEKLESSCTL" status
echo "(waiting for the boot window to close so the launch is recorded on its own)"
boot_over() { "$SEEKLESSCTL" --json status | jq -e '.boot_recording | not'; }
wait_until 10 boot_over || true

step "Launching $MNT/usr/bin/python$PYVER (imports json, email, http.client, sqlite3, decimal)"
"$MNT/usr/bin/python$PYVER" -c 'import json, email.parser, http.client, sqlite3, decimal; print("  python says hello")'
P=$MNT/usr/bin/python$PYVER
echo "(the launch window is 5 s; waiting for the profile)"
has_profile() { "$SEEKLESSCTL" --json profiles | jq -e --arg p "$1" 'any(.[]; .name == $p)'; }
wait_until 30 has_profile "$P" || true

step "Profiles"
"$SEEKLESSCTL" profiles
step "The launch profile: the files Python read, in the order it read them (first 25)"
# into a file first: head leaves early, and seeklessctl, still writing, would die of SIGPIPE (pipefail)
"$SEEKLESSCTL" show "$P" > "$TMP/show.txt"
head -n 27 "$TMP/show.txt"
n=$("$SEEKLESSCTL" --json show "$P" | jq '.files | length')
echo "  ... $n files in all"
step "Sessions"
"$SEEKLESSCTL" sessions

mapfile -t files < <("$SEEKLESSCTL" --json show "$P" | jq -r '.files[].path')
frag() {   # discontinuities of the profile read in order, from filefrag (independent of seekless)
        for f in "${files[@]}"; do filefrag -v "$f"; done |
                awk '/^ *[0-9]+:/ { gsub(/\.\./, " "); gsub(/:/, " "); print $4, $6 }' |
                awk 'NR > 1 && $1 != next_start { d++ } { next_start = $1 + $2 } END { print d + 0 }'
}
(cd "$MNT" && find . -xdev -type f -print0 | sort -z | xargs -0 sha256sum) > "$TMP/sums"
before_frag=$(frag)

step "What optimizing would do (seeklessctl plan)"
"$SEEKLESSCTL" plan | tail -n 4

step "Optimizing (seeklessctl optimize)"
"$SEEKLESSCTL" optimize > "$TMP/optimize.txt"
head -n 12 "$TMP/optimize.txt"

step "Before and after (seeklessctl report)"
"$SEEKLESSCTL" report "$P"
"$SEEKLESSCTL" report "$P" --svg "$TMP/layout.svg" >/dev/null && cp "$TMP/layout.svg" ./seekless-demo-layout.svg &&
        echo "  layout picture (access order vs. disk position, before and after): ./seekless-demo-layout.svg"

step "Checked independently"
drop_all_caches
echo "  filefrag: the profile's files read in order jump $before_frag times before, $(frag) times after"
(cd "$MNT" && sha256sum --quiet -c "$TMP/sums") && echo "  sha256sum: every file on the image is unchanged"
kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null; DAEMON_PID=
do_umount "$MNT"
e2fsck -fn "$LOOP" >/dev/null 2>&1 && echo "  e2fsck -fn: clean"
echo
echo "Done. Everything (image, loop device, bus, daemon) is cleaned up on exit."
