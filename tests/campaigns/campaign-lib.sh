# SPDX-License-Identifier: GPL-2.0-or-later
# Shared parts of the safety campaigns (tests/campaign-*.sh; sourced before lib.sh, whose variables the
# functions use): one loop-mounted
# image at a time, saved once per seed ("base") and restored byte for byte for every run, so that every
# run of a seed starts from the same aged filesystem and the same database as its reference run.
#
#   base_save NAME            the image ($IMG) and the daemon's state ($STATE) -> $TMP/base.NAME.*
#   base_restore NAME         unmount, detach, copy the base back, attach and mount again
#   remount                   unmount and mount again (orphan processing of the mount included)
#   unaccounted               blocks in use that no inode reachable from the root accounts for
#   run_fail MSG              fail naming the run and its seed (so it can be replayed)
#
# The accounting: ext4's used blocks (statfs: total - free) minus the blocks of every inode reachable from
# the root (find -printf %b: data, extent tree and xattr blocks, in 512-byte units) is what the filesystem
# itself uses (bitmaps, inode tables, journal, ...), constant while only files are moved. A donor that
# leaked (an unnamed O_TMPFILE never freed) is in use and in no directory: it raises that figure.

# By hand, outside meson: BUILD_DIR=build tests/campaigns/campaign-kill.sh
if [ -z "${SEEKLESSD:-}" ] && [ -n "${BUILD_DIR:-}" ]; then
        _b=$(cd "$BUILD_DIR" && pwd)
        export SEEKLESSD=$_b/daemon/seeklessd SEEKLESSCTL=$_b/cli/seeklessctl OPEN_FILES=$_b/tests/open-files
        SOURCE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
        export SOURCE_ROOT BUILD_ROOT=$_b
fi

CURRENT_RUN="(setup)"
run_fail() { fail "run $CURRENT_RUN: $*"; }

attach_mount() {
        LOOP=$(losetup --find --show "$IMG")
        echo 1 > "/sys/block/${LOOP#/dev/}/queue/rotational"
        mkdir -p "$MNT"
        mount -t ext4 "$LOOP" "$MNT"
}

detach_unmount() {
        if mountpoint -q "$MNT"; then
                umount "$MNT" 2>/dev/null || { sleep 1; umount "$MNT"; }
        fi
        if [ -n "$LOOP" ]; then losetup -d "$LOOP"; LOOP=; fi
}

base_save() {
        detach_unmount
        cp --sparse=always "$IMG" "$TMP/base.$1.img"
        rm -rf "$TMP/base.$1.state"
        cp -a "$STATE" "$TMP/base.$1.state"
        attach_mount
}

base_restore() {
        detach_unmount
        cp --sparse=always "$TMP/base.$1.img" "$IMG"
        rm -rf "$STATE"
        cp -a "$TMP/base.$1.state" "$STATE"
        attach_mount
}

remount() {
        umount "$MNT"
        mount -t ext4 "$LOOP" "$MNT"
}

unaccounted() {
        sync
        local used files
        used=$(stat -f -c '%b %f' "$MNT" | awk '{ print $1 - $2 }')
        files=$(find "$MNT" -xdev -printf '%b\n' | awk '{ s += $1 } END { print s / 8 }')
        echo $((used - files))
}

# e2fsck -fn on the unmounted image; also no orphan list left in the superblock. Mounts it again.
fsck_and_orphans() {
        umount "$MNT"
        e2fsck -fn "$LOOP" > "$TMP/fsck.out" 2>&1 || { cat "$TMP/fsck.out"; run_fail "e2fsck -fn found problems"; }
        # into a file first: under pipefail, `dumpe2fs | grep -q` would turn a match into a failed pipeline
        # (SIGPIPE to dumpe2fs) and so hide the orphans it looks for
        dumpe2fs -h "$LOOP" > "$TMP/super.txt" 2>/dev/null || run_fail "dumpe2fs -h $LOOP failed"
        if grep -qi '^Last orphan inode:' "$TMP/super.txt"; then
                run_fail "the superblock still lists orphan inodes: $(grep -i orphan "$TMP/super.txt")"
        fi
        mount -t ext4 "$LOOP" "$MNT"
}

# A random integer in [0, N) from bash's seeded RANDOM.
rand_below() { echo $(( ((RANDOM << 15) | RANDOM) % $1 )); }

now_ms() { date +%s%3N; }

db() { sqlite3 -cmd ".timeout 5000" "$STATE/seekless.db" "$@"; }
