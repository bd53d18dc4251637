# SPDX-License-Identifier: GPL-2.0-or-later
# The generic shell library (sourced) under the tests' harness (tests/lib.sh), the benchmarks' (bench/lib.sh),
# the demo and the campaigns: waiting, figures, loop-mounted images and their cleanup, JSON lines. It knows
# nothing of seekless (no daemon, no bus) and nothing of a test harness (no exit status 77, no pass/fail):
# what builds on it adds those.
#
#   log MSG...                    a line on stdout with the time of day
#   die MSG...                    "ERROR: MSG" on stderr, then the caller's die_hook if it has one; exit 1
#   wait_until SECONDS CMD...     runs CMD ten times a second until it succeeds; 1 if it never did
#   wait_pid_gone PID SECONDS     the same, until PID is gone
#   now; elapsed T0 T1            the wall clock in seconds; the seconds from T0 to T1 (3 decimals)
#   median                        the median of the numbers on stdin, one a line
#   ratio A B                     A / B with 2 decimals; "-" when B is 0 or empty
#   mib BYTES; mibs BYTES SECONDS MiB with one decimal; MiB/s
#   forget ARRAY VALUE            drops VALUE from the array named ARRAY
#   make_ext4_image PATH SIZE [MKFS_OPTIONS...]   4 KiB blocks, inode tables and journal written now
#   attach IMG [ROTATIONAL]       a loop device for IMG -> $ATTACHED, remembered in CORE_LOOPS; ROTATIONAL
#                                 (0 or 1) is set on its queue (a loop device takes it from what backs it)
#   detach LOOP                   detaches it by name, forgets it
#   do_mount DEV DIR [OPTIONS]    mounts ext4, remembered in CORE_MOUNTS; do_umount DIR
#   release_mounts_and_loops      for a cleanup trap: what is still remembered, unmounted last first (lazily
#                                 if busy after a second), then detached by name (never `losetup -D`)
#   drop_file_pages FILE...       those files' clean pages out of the page cache, and no one else's
#   drop_all_caches [WHAT]        sync, then every clean page and dentry of the machine (WHAT: drop_caches'
#                                 3, 2 for dentries and inodes only), once no test beside keeps the caches
#                                 (caches_kept)
#   caches_kept                   for the rest of this script (and what it starts), no drop_all_caches
#                                 elsewhere on the machine: for tests that count cached pages or disk reads
#   json_line KEY VALUE...        one JSON object on one line; a VALUE that reads as a number is a number
#
# Not in a subshell: attach and do_mount must run in the shell whose trap cleans up ($(...) would lose what
# they remember).

CORE_LOOPS=() CORE_MOUNTS=() ATTACHED=

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }

die() {
        echo "ERROR: $*" >&2
        if declare -F die_hook >/dev/null; then die_hook; fi
        exit 1
}

wait_until() {      # SECONDS CMD...
        local t=$1 i; shift
        for ((i = 0; i < t * 10; i++)); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}

wait_pid_gone() {   # PID SECONDS
        local i
        for ((i = 0; i < $2 * 10; i++)); do
                kill -0 "$1" 2>/dev/null || return 0
                sleep 0.1
        done
        return 1
}

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
mibs() { awk -v b="$1" -v s="$2" 'BEGIN { if (s + 0 == 0) print "-"; else printf "%.1f", b / 1048576 / s }'; }

forget() {          # ARRAY-NAME VALUE
        local -n arr=$1
        local keep=() x
        for x in "${arr[@]}"; do [ "$x" = "$2" ] || keep+=("$x"); done
        arr=("${keep[@]+"${keep[@]}"}")
}

make_ext4_image() { # PATH SIZE [MKFS_OPTIONS...]
        local path=$1 size=$2
        shift 2
        truncate -s "$size" "$path"
        mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$@" "$path"
}

attach() {          # IMG [ROTATIONAL]
        ATTACHED=$(losetup --find --show "$1") || die "losetup $1"
        CORE_LOOPS+=("$ATTACHED")
        [ -z "${2:-}" ] || echo "$2" > "/sys/block/${ATTACHED#/dev/}/queue/rotational"
}
detach() { losetup -d "$1" || die "losetup -d $1"; forget CORE_LOOPS "$1"; }
do_mount() { mkdir -p "$2"; mount -t ext4 ${3:+-o "$3"} "$1" "$2" || die "mount $1 $2"; CORE_MOUNTS+=("$2"); }
do_umount() { umount "$1" || die "umount $1"; forget CORE_MOUNTS "$1"; }

release_mounts_and_loops() {
        local i
        for ((i = ${#CORE_MOUNTS[@]} - 1; i >= 0; i--)); do
                mountpoint -q "${CORE_MOUNTS[i]}" 2>/dev/null || continue
                umount "${CORE_MOUNTS[i]}" 2>/dev/null || { sleep 1; umount -l "${CORE_MOUNTS[i]}"; }
        done
        for ((i = ${#CORE_LOOPS[@]} - 1; i >= 0; i--)); do
                losetup -d "${CORE_LOOPS[i]}" 2>/dev/null
        done
        CORE_MOUNTS=() CORE_LOOPS=()
}

# dd's nocache on a whole file drops its clean pages (POSIX_FADV_DONTNEED): a drop_caches would evict what
# everything else on the machine has cached too
drop_file_pages() {
        local f
        sync
        for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done
}
# Between copies of the suite (issue 31's runs beside a second copy, the flake hunts) and the benchmarks: a
# test that counts the pages a prefetch cached, or the reads a start makes, fails when another one drops
# every cache on the machine meanwhile (prefetch-boot's first file, a few pages short: tests/README.md).
# Those tests hold this lock shared; a drop takes it exclusively, so it waits for them, and they for it.
CACHES_LOCK=/var/tmp/seekless-caches.lock
caches_kept() {
        exec {CACHES_KEPT_FD}>>"$CACHES_LOCK"
        flock -s "$CACHES_KEPT_FD"
}
drop_all_caches() {
        local fd t=$SECONDS
        exec {fd}>>"$CACHES_LOCK"
        flock -x "$fd"
        [ $((SECONDS - t)) -lt 2 ] || echo "  waited $((SECONDS - t)) s for a test beside that keeps the caches"
        sync; echo "${1:-3}" > /proc/sys/vm/drop_caches
        exec {fd}>&-
}

json_line() {       # KEY VALUE [KEY VALUE...]
        jq -cn '$ARGS.positional as $a
                | [range(0; $a | length; 2) | { key: $a[.], value: ($a[. + 1] | (tonumber? // .)) }]
                | from_entries' --args "$@"
}
