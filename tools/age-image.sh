#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Age a mounted ext4 filesystem so that files end up fragmented and scattered, for tests and benchmarks.
#
#   tools/age-image.sh MOUNTPOINT SEED [N_FILES] [MAX_KIB]
#
# Creates MOUNTPOINT/aged/f000 ... f<N_FILES-1> (default 40) of pseudo-random sizes in [4, MAX_KIB] KiB (default
# 1024), plus filler files in MOUNTPOINT/aged/.filler/ (use the f* glob for the files themselves):
#   1. free space is fragmented first: small filler files are written, synced, and about half of them deleted;
#   2. the files are then grown together, round-robin in a shuffled order each round, by appending 4-64 KiB chunks
#      with one dd (conv=fsync) per chunk, so each chunk is allocated before the next file's; now and then a filler
#      chunk lands in between;
#   3. about half of those fillers are deleted as well.
# Sizes, chunk sizes, write order and deletions come from bash's RANDOM seeded with SEED, so they are the same for
# a seed; where the allocator puts the blocks may vary slightly between kernels. The data itself is random.
# Ends with "aged: N files, X extents total, Y MiB" and a line with the mean extents per file (filefrag).

set -euo pipefail

usage() {
        echo "usage: $0 MOUNTPOINT SEED [N_FILES] [MAX_KIB]" >&2
        exit 2
}

[ $# -ge 2 ] && [ $# -le 4 ] || usage
MNT=$1
SEED=$2
N_FILES=${3:-40}
MAX_KIB=${4:-1024}

[[ $SEED =~ ^[0-9]+$ ]] || usage
[[ $N_FILES =~ ^[0-9]+$ ]] && [ "$N_FILES" -ge 1 ] && [ "$N_FILES" -le 1000 ] || usage
[[ $MAX_KIB =~ ^[0-9]+$ ]] && [ "$MAX_KIB" -ge 4 ] || usage
[ -d "$MNT" ] || { echo "$0: $MNT is not a directory" >&2; exit 1; }

DIR=$MNT/aged
FILLER=$DIR/.filler
if [ -e "$DIR" ]; then
        echo "$0: $DIR already exists, refusing to touch it" >&2
        exit 1
fi
mkdir -p "$FILLER"

RANDOM=$SEED

# A pseudo-random integer in [lo, hi] (30 bits of RANDOM, so large ranges work too).
rand_between() {
        local lo=$1 hi=$2
        REPLY=$(( lo + ((RANDOM << 15) | RANDOM) % (hi - lo + 1) ))
}

# Append KIB KiB to FILE and wait until the blocks are allocated.
append() {
        dd if=/dev/urandom of="$1" bs="$2K" count=1 iflag=fullblock oflag=append conv=notrunc,fsync status=none
}

names=() sizes=() written=()
total_kib=0
for ((i = 0; i < N_FILES; i++)); do
        printf -v name 'f%03d' "$i"
        rand_between 4 "$MAX_KIB"
        names+=("$name") sizes+=("$REPLY") written+=(0)
        total_kib=$((total_kib + REPLY))
done

# 1. Fragment the free space: fillers of 4-64 KiB for about half the total, then delete about half of them.
fillers=()
nf=0 filled=0
while [ "$filled" -lt $((total_kib / 2)) ]; do
        rand_between 1 16
        kib=$((REPLY * 4))
        printf -v name 'pre%04d' "$nf"
        dd if=/dev/urandom of="$FILLER/$name" bs="${kib}K" count=1 iflag=fullblock status=none
        fillers+=("$name")
        filled=$((filled + kib)) nf=$((nf + 1))
done
sync -f "$FILLER"
for name in "${fillers[@]}"; do
        if ((RANDOM % 2 == 0)); then
                rm -f "$FILLER/$name"
        fi
done
sync -f "$FILLER"

# 2. Grow the files together in a shuffled round-robin, with filler chunks in between now and then.
fillers=()
nf=0
active=()
for ((i = 0; i < N_FILES; i++)); do
        active+=("$i")
done
while [ ${#active[@]} -gt 0 ]; do
        # Fisher-Yates shuffle of this round's order.
        for ((k = ${#active[@]} - 1; k > 0; k--)); do
                j=$((RANDOM % (k + 1)))
                t=${active[k]} active[k]=${active[j]} active[j]=$t
        done

        next=()
        for i in "${active[@]}"; do
                rand_between 1 16
                kib=$((REPLY * 4))
                left=$((sizes[i] - written[i]))
                if ((kib > left)); then
                        kib=$left
                fi
                append "$DIR/${names[i]}" "$kib"
                written[i]=$((written[i] + kib))
                if ((written[i] < sizes[i])); then
                        next+=("$i")
                fi

                if ((RANDOM % 3 == 0)); then
                        rand_between 1 16
                        printf -v name 'mid%04d' "$nf"
                        append "$FILLER/$name" $((REPLY * 4))
                        fillers+=("$name")
                        nf=$((nf + 1))
                fi
        done
        active=("${next[@]+"${next[@]}"}")
done

# 3. Leave holes where the in-between fillers were.
for name in "${fillers[@]+"${fillers[@]}"}"; do
        if ((RANDOM % 2 == 0)); then
                rm -f "$FILLER/$name"
        fi
done
sync -f "$DIR"

# Check: extents per file (filefrag merges physically adjacent ones, like FIEMAP), and how often the first
# physical block of a file comes before that of the previous file in name order.
extents=0 bytes=0 inversions=0 prev=-1
for name in "${names[@]}"; do
        f=$DIR/$name
        n=$(filefrag "$f" | awk '{ print $(NF - 2) }')
        first=$(filefrag -v "$f" | awk '$1 == "0:" && !seen { sub(/\.\..*/, "", $4); print $4; seen = 1 }')
        extents=$((extents + n))
        bytes=$((bytes + $(stat -c %s "$f")))
        if [ -n "$first" ]; then
                if ((prev >= 0 && first < prev)); then
                        inversions=$((inversions + 1))
                fi
                prev=$first
        fi
done

awk -v n="$N_FILES" -v x="$extents" -v b="$bytes" -v inv="$inversions" 'BEGIN {
        printf "aged: %d files, %d extents total, %.1f MiB\n", n, x, b / 1048576
        printf "aged: %.2f extents per file, %d of %d files start below the previous one on disk\n", x / n, inv, n - 1
}'
