#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What durable checkpoints cost a run: bench/checkpoint-cost.c (the ways it compares are described there)
# on a scratch ext4 image in a file on a disk (DIR: not a tmpfs, whose "syncs" cost nothing), on a loop
# device, the run store's database on the same filesystem. See bench/README.md, "Durable checkpoints".
#
#   sudo bench/checkpoint.sh [BUILD_DIR]        (default: build/; ninja -C build bench/checkpoint-cost)
#
# Knobs (environment): NFILES=1000 ROUNDS=5 WAYS="lazy commit nocommit durable walsync optimizer" DIR=/var/tmp SIZE=1G
set -euo pipefail

NFILES=${NFILES:-1000}
ROUNDS=${ROUNDS:-5}
WAYS=${WAYS:-lazy commit nocommit durable walsync optimizer}
DIR=${DIR:-/var/tmp}
SIZE=${SIZE:-1G}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
[ -d "$BUILD" ] || BUILD=$SRC/$BUILD
BUILD=$(cd "$BUILD" && pwd)
BENCH=$BUILD/bench/checkpoint-cost

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: bench/checkpoint.sh needs root (loop devices, mount): sudo $0 ${1:-build}"
        exit 77
fi
[ -x "$BENCH" ] || { echo "ERROR: $BENCH not found; build it first (ninja -C build bench/checkpoint-cost)" >&2; exit 1; }
if [ "$(stat -f -c %T "$DIR")" = tmpfs ]; then
        echo "ERROR: $DIR is a tmpfs: the syncs measured would cost nothing; DIR= a directory on a disk" >&2
        exit 1
fi

TMP=$(mktemp -d "$DIR/seekless-checkpoint.XXXXXX")
. "$SRC/tests/scratch.sh" && scratch_claim "$TMP" && scratch_guard "$TMP"
LOOP=

cleanup() {
        local rc=$?
        set +e
        mountpoint -q "$TMP/mnt" && { umount "$TMP/mnt" 2>/dev/null || { sleep 1; umount -l "$TMP/mnt"; }; }
        [ -n "$LOOP" ] && losetup -d "$LOOP"
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

truncate -s "$SIZE" "$TMP/fs.img"
mkfs.ext4 -q -F -b 4096 "$TMP/fs.img"
LOOP=$(losetup --find --show "$TMP/fs.img")
mkdir "$TMP/mnt"
mount "$LOOP" "$TMP/mnt"
echo "$(date -u '+%F %T') UTC, $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); image on" \
        "$(df --output=source "$DIR" | tail -n1) ($(cat "/sys/block/$(basename "$(df --output=source "$DIR" | tail -n1)" | sed 's/[0-9]*$//')/queue/rotational" 2>/dev/null || echo '?') = rotational)," \
        "loop device $LOOP (direct I/O $(cat "/sys/block/${LOOP#/dev/}/loop/dio" 2>/dev/null || echo '?'))"
# shellcheck disable=SC2086
"$BENCH" "$TMP/mnt" "/sys/fs/ext4/${LOOP#/dev/}" "$TMP/mover.state" "$NFILES" "$ROUNDS" $WAYS
umount "$TMP/mnt"
e2fsck -fn "$TMP/fs.img" >/dev/null || { echo "ERROR: e2fsck -fn found problems" >&2; exit 1; }
echo "e2fsck -fn: clean"
