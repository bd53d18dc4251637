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

if [ "$(stat -f -c %T "$DIR")" = tmpfs ]; then
        echo "ERROR: $DIR is a tmpfs: the syncs measured would cost nothing; DIR= a directory on a disk" >&2
        exit 1
fi
. "$(dirname "$0")/lib.sh"
BENCH_SCRATCH=$DIR bench_init checkpoint mkfs.ext4 e2fsck losetup jq -- "$@"
bench_binaries bench/checkpoint-cost

make_ext4_image "$TMP/fs.img" "$SIZE"
attach "$TMP/fs.img"; LOOP=$ATTACHED
do_mount "$LOOP" "$TMP/mnt"
disk=$(df --output=source "$DIR" | tail -n1)
echo "$(date -u '+%F %T') UTC, $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); image on" \
        "$disk ($(cat "/sys/block/$(basename "$disk" | sed 's/[0-9]*$//')/queue/rotational" 2>/dev/null || echo '?') = rotational)," \
        "loop device $LOOP (direct I/O $(cat "/sys/block/${LOOP#/dev/}/loop/dio" 2>/dev/null || echo '?'))"
# one JSON line a run (the mover's own log lines pass through)
# shellcheck disable=SC2086
"${BIN[checkpoint-cost]}" --json "$TMP/mnt" "/sys/fs/ext4/${LOOP#/dev/}" "$TMP/mover.state" "$NFILES" "$ROUNDS" $WAYS |
        while IFS= read -r line; do
                case $line in
                "{"*)
                        result_with "$line" measure checkpoint variant "$(jv way "$line")"
                        IFS=$'\t' read -r r w s m c <<< "$(jq -r '[.round, .way, .secs, .ms_per_file, .counted] | @tsv' <<< "$line")"
                        printf 'round %u %-9s %7.3f s  %5.2f ms a file%s\n' "$r" "$w" "$s" "$m" \
                                "$([ "$c" = true ] || echo '  (not every file moved and checkpointed: not counted)')" ;;
                *) echo "$line" ;;
                esac
        done
do_umount "$TMP/mnt"
e2fsck -fn "$TMP/fs.img" >/dev/null || die "e2fsck -fn found problems"
echo "e2fsck -fn: clean"
result measure run nfiles "$NFILES" rounds "$ROUNDS" ways "$WAYS"
bench_finish
