#!/bin/bash
# Faults from below (issue 21, campaign 6): relocation on a device that starts failing. The ext4 image sits
# on a loop device (direct I/O off) whose backing file is served by tests/helpers/faultfs.c, a FUSE
# filesystem that fails reads or writes on command: the kernel gets real failed bios (doc/kernel.md §6).
# Scenarios, each from the same saved image and database (an aged image with a recorded launch profile):
#   write-start    every write fails from before `seeklessctl optimize` on
#   write-mid      every write fails from the moment the run has moved its first file (by hand, with RUNS
#                  > 1: its K-th, K random up to half the profile)
#   write-donor    writes fail only where the donor lies (a disk that takes writes to blocks it has but
#                  not to new ones, as a thin volume that ran out of space): the journal keeps working
#   read-part      reads fail over the blocks of three profile files
#   full           the free space, in 64 KiB pieces, is the donor's size: ext4 refuses it (ENOSPC), no
#                  injection
#   tight          one block more: the donor is made in about a hundred pieces on a full filesystem
#   idle-retry     (not in the default list) writes fail; the idle policy's own run fails, and no other
#                  run starts within a minute
#   remount-ro     errors=remount-ro and an ext4 error after the first file (K-th, as above), through
#                  ext4's sysfs trigger_fs_error: the filesystem goes read-only under the mover (ext4's own
#                  path; `mount -o remount,ro` is refused while the mover has files open for writing)
# Checked independently of the daemon: the daemon is still running and answers on the bus; seeklessctl
# optimize, the run store and the log agree on how the run ended (failed, with the reason, when the
# filesystem failed; done, skipping the unreadable files with theirs) and nothing is left pending; while
# the device still fails, every file reads back with its old sha256 from the disk (caches dropped), but for
# those whose blocks cannot be read (which must fail) and any the mover could not move back (named; see
# doc/kernel.md §6). Then the device is healed, the daemon stopped and the filesystem remounted (the
# journal replayed: an aborted journal shows the on-disk state only then): sha256 of every file as before
# the run, blocks accounted (no leaked donor; after e2fsck when ext4 recorded an error, see
# repair_kernel_errors), e2fsck -fn clean and no orphan list.
# Knobs: SCENARIOS (names above), RUNS (repeat the list; the fault moment then varies), SEED, ERRORS (the
# mount's errors=: continue, ext4's default, or remount-ro; the scenario remount-ro always has the latter).
. "$(dirname "$0")/campaigns/campaign-lib.sh"
. "$(dirname "$0")/lib.sh"

FAULTFS=${FAULTFS:-${BUILD_ROOT:-}/tests/faultfs}
[ -x "$FAULTFS" ] || { echo "SKIP: no faultfs helper (libfuse3-dev missing at build time)"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

read -r -a SCENARIOS <<<"${SCENARIOS:-write-start write-mid write-donor read-part full tight remount-ro}"
RUNS=${RUNS:-1} SEED=${SEED:-1} ERRORS=${ERRORS:-continue}
RANDOM=$SEED

BACK=$TMP/back.img      # the image itself; $IMG is its view through faultfs
FUSE=$TMP/fuse
FUSE_PID=
IMG=$FUSE/disk MNT=$TMP/mnt
CTL=$FUSE/ctl

# lib.sh's cleanup stops the daemon and detaches; the stack under it goes after: ext4, loop, FUSE, faultfs
faults_teardown() {
        local rc=$?
        set +e
        if [ -n "$SIGNALLED" ]; then
                [ -z "$DAEMON_PID" ] || kill -KILL "$DAEMON_PID" 2>/dev/null
                [ -z "$FUSE_PID" ] || echo ok > "$CTL" 2>/dev/null
        else
                [ -z "$FUSE_PID" ] || echo ok > "$CTL" 2>/dev/null
                if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
                        kill -TERM "$DAEMON_PID"; wait_pid_gone "$DAEMON_PID" 20 || kill -KILL "$DAEMON_PID"
                fi
        fi
        DAEMON_PID=
        if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" 2>/dev/null || umount -l "$MNT"; fi
        [ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null
        LOOP=
        if mountpoint -q "$FUSE" 2>/dev/null; then umount "$FUSE" 2>/dev/null || umount -l "$FUSE"; fi
        [ -z "$FUSE_PID" ] || { kill "$FUSE_PID" 2>/dev/null; wait "$FUSE_PID" 2>/dev/null; }
        (exit "$rc")
        cleanup
}
trap faults_teardown EXIT

attach_mount() {        # [mount options]
        LOOP=$(losetup --find --show --direct-io=off "$IMG")
        echo 1 > "/sys/block/${LOOP#/dev/}/queue/rotational"
        mkdir -p "$MNT"
        mount -t ext4 ${1:+-o "$1"} "$LOOP" "$MNT"
        SYSFS=/sys/fs/ext4/${LOOP#/dev/}
}
# Unmounted here, the filesystem may live on in another mount namespace that copied it (a concurrent
# test's `unshare --mount`): then e2fsck finds it in use, with its journal to replay, and it writes to the
# image whenever that namespace ends, also into the next scenario's copy. Wait until nobody holds it.
device_free() { python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' "$LOOP" 2>/dev/null; }
wait_device_free() {
        wait_until 120 device_free || run_fail "$LOOP is still in use after the unmount (mounted in another mount namespace?)"
}
detach_unmount() {
        if mountpoint -q "$MNT"; then
                umount "$MNT" 2>/dev/null || { sleep 1; umount "$MNT"; }
        fi
        if [ -n "$LOOP" ]; then wait_device_free; losetup -d "$LOOP"; LOOP=; fi
}
remount() {
        umount "$MNT"
        wait_device_free
        mount -t ext4 "$LOOP" "$MNT"
}
fsck_and_orphans() {
        umount "$MNT"
        wait_device_free
        e2fsck -fn "$LOOP" > "$TMP/fsck.out" 2>&1 || { cat "$TMP/fsck.out"; run_fail "e2fsck -fn found problems"; }
        # into a file first: under pipefail, `dumpe2fs | grep -q` would turn a match into a failed pipeline
        # (SIGPIPE to dumpe2fs) and so hide the orphans it looks for
        dumpe2fs -h "$LOOP" > "$TMP/super.txt" 2>/dev/null || run_fail "dumpe2fs -h $LOOP failed"
        if grep -qi '^Last orphan inode:' "$TMP/super.txt"; then
                run_fail "the superblock still lists orphan inodes: $(grep -i orphan "$TMP/super.txt")"
        fi
        mount -t ext4 "$LOOP" "$MNT"
}
base_save() {
        detach_unmount
        cp --sparse=always "$BACK" "$TMP/base.img"
        rm -rf "$TMP/base.state"; cp -a "$STATE" "$TMP/base.state"
        attach_mount
}
base_restore() {        # [mount options]
        detach_unmount
        cp --sparse=always "$TMP/base.img" "$BACK"
        rm -rf "$STATE"; cp -a "$TMP/base.state" "$STATE"
        attach_mount "${1:-}"
}
ctl_fault() { echo "$1" > "$CTL" || run_fail "faultfs refused: $1"; }
ctl_count() { awk -v k="$1" '$1 == k { print $2 }' "$CTL"; }

truncate -s 512M "$BACK"
# -m 0: no blocks reserved for root, so that "nearly full" is full for the daemon (root) too
mkfs.ext4 -q -F -b 4096 -m 0 -E lazy_itable_init=0,lazy_journal_init=0 "$BACK"
mkdir -p "$FUSE"
"$FAULTFS" "$BACK" "$FUSE" 2>"$TMP/faultfs.log" &
FUSE_PID=$!
wait_until 10 test -e "$CTL" || fail "faultfs did not come up: $(cat "$TMP/faultfs.log")"
attach_mount

# Recorder=fanotify: the layout checked here is of whole files, which the tracepoint recorder's profiles of
# these reads are; the BPF recorder's hold the ranges a program used, whose layout optimize-ranges checks
config() {        # RATE: no run starts by itself
        write_config <<EOC
[Record]
Recorder=fanotify
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$1
[Idle]
IdleSec=3600
EOC
}
# the Optimizing property read, strictly (a failed read is not "not optimizing")
run_over() {
        [ "$(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager Optimizing)" = "b false" ]
}
daemon_up() { start_daemon --filesystem="$MNT"; wait_until 30 boot_recording_over || run_fail "boot window did not close"; }
last_run() { db "SELECT COALESCE(MAX(id), 0) FROM runs"; }

# the base: an aged image, a launch profile over its files
start_bus
config 0; daemon_up
setup_aged_profile 7 24 1024
profile_paths "$P" > "$TMP/order"
checksum_all "$TMP/base.sums"
stop_daemon
base_save
ACCT0=$(unaccounted)
NPROF=$(wc -l < "$TMP/order")
echo "  base: $NPROF files in the profile, $(discontinuities_of $(cat "$TMP/order")) discontinuities, $ACCT0 blocks unaccounted"

# The free ranges of the mounted filesystem as "START END" byte lines, largest first (dumpe2fs reads the
# bitmaps from the device: after a sync, what the allocator has).
free_ranges() {
        dumpe2fs "$LOOP" 2>/dev/null | awk '/^  Free blocks: / { sub(/^  Free blocks: /, ""); n = split($0, r, ", ");
                for (i = 1; i <= n; i++) { if (r[i] == "") continue; split(r[i], ab, "-"); if (ab[2] == "") ab[2] = ab[1];
                        print (ab[2] - ab[1] + 1), ab[1] * 4096, (ab[2] + 1) * 4096 } }' | sort -rn | cut -d" " -f2-
}

# What the kernel recorded on disk (superblock): FS Error count, or 0.
sb_errors() { dumpe2fs -h "$LOOP" 2>/dev/null | awk -F: '/^FS Error count/ { gsub(/ /, "", $2); e = $2 } END { print e + 0 }'; }

# A filesystem on which ext4 recorded an error is mounted without orphan processing ("Errors on
# filesystem, clearing orphan list"): the donor, an unnamed inode on that list when the error came, stays
# allocated until e2fsck, which such a filesystem needs anyway (its state says so; a boot's fsck -p checks
# it in full). So then: e2fsck -fn may only find inodes that no file of the tree is (the donor), and
# blocks and counts that follow from them; e2fsck -fy repairs that; after it the checks below apply as
# everywhere. Prints what was repaired ("" when nothing had to be).
repair_kernel_errors() {
        local n out inodes bad
        n=$(sb_errors)
        [ "$n" -gt 0 ] || return 0
        find "$MNT" -xdev -printf '%i\n' | sort -u > "$TMP/inodes"
        umount "$MNT"
        wait_device_free
        out=$TMP/fsck-kernel.out
        e2fsck -fn "$LOOP" > "$out" 2>&1 && { mount -t ext4 "$LOOP" "$MNT"; echo "ext4 recorded $n error(s), e2fsck found nothing"; return 0; }
        inodes=$(grep -oE '[Ii]node [0-9]+' "$out" | awk '{ print $2 }' | sort -u)
        bad=$(comm -12 <(echo "$inodes") "$TMP/inodes")
        [ -z "$bad" ] || { cat "$out" >&2; run_fail "e2fsck found problems with files of the tree (inodes $bad)"; }
        # anything but the unattached inode(s) and the counts and bitmaps they make wrong is not the donor
        if grep -vE '^(e2fsck |Warning: skipping journal|Pass [1-5]|Fix\? no|Clear\? no|Connect to /lost\+found\? no|$|/dev/loop)' "$out" |
                grep -vE 'Unattached (zero-length )?inode|Inode [0-9]+ ref count is|Deleted inode [0-9]+ has zero dtime|Free (blocks|inodes) count wrong|Block bitmap differences|Inode bitmap differences|Padding at end of|^ *[-+][0-9(]|WARNING: Filesystem still has errors|Inodes that were part of a corrupted orphan|was part of the orphaned inode list' |
                grep -q .; then
                cat "$out" >&2
                run_fail "e2fsck found more than an unattached inode"
        fi
        e2fsck -fy "$LOOP" > "$TMP/fsck-repair.out" 2>&1 || [ $? -le 1 ] || { cat "$TMP/fsck-repair.out" >&2; run_fail "e2fsck -fy failed"; }
        mount -t ext4 "$LOOP" "$MNT"
        echo "ext4 recorded $n error(s); e2fsck -fy: $(grep -cE 'Unattached|zero dtime|orphan' "$out") unattached inode(s) ($(echo $inodes | tr ' ' ',')) freed"
}

# idle-retry (by hand): the idle policy's own run on a disk whose writes fail ends failed, and no other
# starts by itself within a minute (MinIntervalHours= counts the failed run; no endless retries).
idle_retry() {
        write_config <<EOC
[Record]
Recorder=fanotify
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
[Idle]
IdleSec=2
BootQuietSec=0
MaxLoadPerCPU=100
MaxIOPressure=100
EOC
        ctl_fault write-error
        daemon_up
        wait_until 60 eval '[ "$(db "SELECT COUNT(*) FROM runs WHERE state = '"'failed'"'")" -ge 1 ]' ||
                run_fail "the idle run did not start and fail: $(db "SELECT id, state FROM runs")"
        sleep 60
        kill -0 "$DAEMON_PID" 2>/dev/null || run_fail "seeklessd died"
        [ "$(db "SELECT COUNT(*) FROM runs")" = 1 ] || run_fail "runs started again: $(db "SELECT id, state FROM runs" | tr '\n' ' ')"
        echo "  IdleStatus: $(busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager IdleStatus)"
        ctl_fault ok
        stop_daemon
        remount
        verify_checksums "$TMP/base.sums"
        [ "$(unaccounted)" = "$ACCT0" ] || run_fail "blocks not accounted for"
        fsck_and_orphans
        pass "idle-retry: one failed run, none after it in 60 s"
}

TOTAL_BYTES=0 TOTAL_FAULTS=0 CORRUPT=0 FSCKERR=0 LEAKED=0 CRASHES=0 KERNEL_ERRORS=0
for ((run = 0; run < RUNS; run++)); do
for sc in "${SCENARIOS[@]}"; do
        CURRENT_RUN="$run/$sc (SEED=$SEED)"
        echo "$sc:"
        opts=errors=$ERRORS; [ "$sc" = remount-ro ] && opts=errors=remount-ro
        base_restore "$opts"; : > "$DAEMON_LOG"
        rm -f "$TMP/fsck-kernel.out"
        werr0=$(( $(ctl_count write_errors) + $(ctl_count flush_errors) )) rerr0=$(ctl_count read_errors)
        rate=0; case $sc in write-mid|remount-ro) rate=8 ;; esac
        if [ "$sc" = idle-retry ]; then
                idle_retry
                continue
        fi
        config "$rate"; daemon_up
        unreadable=()
        case $sc in
        write-start)
                ctl_fault write-error ;;
        write-donor)
                # every free range of the filesystem (e2freefrag's view after a sync): where the donor goes
                sync
                free_ranges | head -n 64 | while read -r a b; do ctl_fault "write-error $a $b"; done ;;
        read-part)
                # the first three files of the profile: their blocks cannot be read
                for f in $(sed -n 1,3p "$TMP/order"); do
                        file_extents "$f" | while read -r _ p l; do ctl_fault "read-error $((p * 4096)) $(((p + l) * 4096))"; done
                        unreadable+=("$f")
                done ;;
        full|tight)
                # the free space cut into 64 KiB pieces (all of it taken, then given back one hole every
                # 128 KiB) that add up to the donor's size (full: its extent tree needs a block more, so
                # ext4 refuses it: ENOSPC) or one block more (tight: it is made in about a hundred pieces,
                # and the moved files' extent trees grow)
                need=$(xargs stat -c %s < "$TMP/order" | awk '{ s += int(($1 + 4095) / 4096) } END { print s }')
                free=$need; [ "$sc" = tight ] && free=$((need + 1))
                fallocate -l $(( ($(stat -f -c %a "$MNT") - 16) * 4096 )) "$MNT/filler"
                sync
                free=$((free - $(stat -f -c %a "$MNT")))     # what is left beside the filler counts
                for ((h = 0; h * 16 < free; h++)); do
                        len=$((free - h * 16)); [ "$len" -le 16 ] || len=16
                        fallocate -p -o $((h * 32 * 4096)) -l $((len * 4096)) "$MNT/filler"
                done
                sync
                echo "  free: $(stat -f -c %a "$MNT") blocks in pieces, the donor needs $need" ;;
        esac
        drop_image_pages
        # the fault moment of the mid-run scenarios: after K files are done (1, or random by hand)
        k=1; [ "$RUNS" -gt 1 ] && k=$((1 + $(rand_below $((NPROF / 2)))))
        t0=$(now_ms)
        ctl --json=short optimize > "$TMP/opt.json" 2>"$TMP/opt.err" &
        opt=$!
        case $sc in
        write-mid|remount-ro)
                wait_until 30 eval '[ "$(db "SELECT COUNT(*) FROM run_files WHERE run_id = (SELECT MAX(id) FROM runs) AND state = '"'done'"'")" -ge $k ]' ||
                        run_fail "$k file(s) not moved in 30 s"
                if [ "$sc" = write-mid ]; then ctl_fault write-error
                else echo "test-faults: injected error" > "$SYSFS/trigger_fs_error"; fi ;;
        esac
        # the client returns when the run ends: within a minute, or the daemon hangs
        for ((i = 0; i < 600; i++)); do kill -0 "$opt" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$opt" 2>/dev/null && { kill "$opt"; run_fail "the run did not end in 60 s (hung?)"; }
        rc=0; wait "$opt" || rc=$?
        ms=$(( $(now_ms) - t0 ))
        kill -0 "$DAEMON_PID" 2>/dev/null || { CRASHES=$((CRASHES + 1)); run_fail "seeklessd died"; }
        run_over || run_fail "the daemon still says Optimizing after the run ended"
        ctl --json=short status > "$TMP/status.json" || run_fail "seeklessd does not answer on the bus"
        run_id=$(last_run)
        state=$(db "SELECT state FROM runs WHERE id = $run_id")
        moved=$(db "SELECT COUNT(*) FROM run_files WHERE run_id = $run_id AND state = 'done'")
        errs=$(cat "$SYSFS/errors_count")
        werr=$(( $(ctl_count write_errors) + $(ctl_count flush_errors) - werr0 )) rerr=$(( $(ctl_count read_errors) - rerr0 ))
        ro=$(awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts)
        echo "  run $run_id: $state after $ms ms (seeklessctl exit $rc), $moved files moved; failed requests: $werr writes or flushes, $rerr reads; ext4 errors_count $errs; mount $ro"
        jq -r '.skipped[].reason' "$TMP/opt.json" 2>/dev/null | sort | uniq -c | sort -rn | head -n 4 | sed 's/^/    /'
        grep -E "Run $run_id .*(stopped|failed|finished)" "$DAEMON_LOG" | head -n 2 | sed 's/^ */    log: /'

        # how the run must have ended: seeklessctl's word, the run store's, the log's
        [ "$(jq -r .state "$TMP/opt.json")" = "$state" ] || run_fail "seeklessctl says $(jq -r .state "$TMP/opt.json"), the store $state"
        reasons() { jq -r '.skipped[].reason' "$TMP/opt.json"; }
        case $sc in
        write-start|write-mid|write-donor|remount-ro)
                [ "$state" = failed ] && [ "$rc" = 1 ] || run_fail "the run should have failed: $state, exit $rc"
                grep -q "Run $run_id on .* stopped: the filesystem failed under it" "$DAEMON_LOG" || run_fail "no log line says why the run stopped"
                [ "$(db "SELECT COUNT(*) FROM run_files WHERE run_id = $run_id AND state = 'pending'")" = 0 ] || run_fail "files left pending"
                db "SELECT reason FROM run_files WHERE run_id = $run_id AND why = 'io-error'" | grep -q . || run_fail "no file says io-error"
                # read-only: the call that meets the ext4 error says EROFS (a move, an open for writing) or,
                # between two files, EIO (the moved file's fsync, on the journal ext4 aborted)
                want="Input/output error"; [ "$sc" = remount-ro ] && want="Read-only file system|Input/output error"
                reasons | grep -Eq "$want" || run_fail "seeklessctl names no '$want': $(reasons | sort -u | head -3)" ;;
        read-part)
                [ "$state" = done ] && [ "$rc" = 0 ] || run_fail "the run should have ended done: $state, exit $rc"
                for f in "${unreadable[@]}"; do
                        jq -e --arg p "$f" 'any(.skipped[]; .path == $p and (.reason | test("Input/output error")))' "$TMP/opt.json" >/dev/null ||
                                run_fail "$f not skipped for its read error: $(jq -c .skipped "$TMP/opt.json")"
                done
                [ "$moved" -ge $((NPROF - ${#unreadable[@]} - 1)) ] || run_fail "only $moved files moved" ;;
        full)
                [ "$state" = done ] && [ "$rc" = 0 ] || run_fail "the run should have ended done: $state, exit $rc"
                [ "$moved" = 0 ] && reasons | grep -q "no space" || run_fail "expected no space for the donor: $(reasons | sort -u)" ;;
        tight)
                [ "$state" = done ] && [ "$rc" = 0 ] || run_fail "the run should have ended done: $state, exit $rc"
                runs=$(donor_runs_of_last_run)
                [ "${runs:-0}" -gt 10 ] || run_fail "the donor should be in pieces: ${runs:-?} run(s)"
                [ "$moved" -ge $((NPROF - 1)) ] || [ -n "$(reasons | grep "no space")" ] ||
                        run_fail "only $moved files moved, and not for lack of space: $(reasons | sort -u)" ;;
        esac
        case $sc in write-mid|remount-ro) [ "$moved" -ge "$k" ] || run_fail "$moved files moved, the fault came after $k" ;; esac

        # still faulty: the files read back right, from the disk (but for those whose blocks cannot be read,
        # which must fail, and those the mover could not move back: their good copy is in memory only, see
        # doc/kernel.md §6); the files are on the image as the kernel has them now, before any remount
        drop_image_pages
        awk '{ print $2 }' "$TMP/base.sums" > "$TMP/live.list"
        for f in "${unreadable[@]}"; do
                (cd "$MNT" && ! sha256sum "./${f#$MNT/}" >/dev/null 2>&1) || run_fail "$f reads although its blocks fail"
                grep -vxF "./${f#$MNT/}" "$TMP/live.list" > "$TMP/live.tmp"; mv "$TMP/live.tmp" "$TMP/live.list"
        done
        db "SELECT f.path FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = $run_id AND rf.reason LIKE '%moving back:%'" > "$TMP/memonly"
        while read -r f; do
                echo "  $f: moving back failed (data in memory only until the remount)"
                grep -vxF "./${f#$MNT/}" "$TMP/live.list" > "$TMP/live.tmp"; mv "$TMP/live.tmp" "$TMP/live.list"
        done < "$TMP/memonly"
        if ! (cd "$MNT" && grep -F -f <(sed 's/^/  /' "$TMP/live.list") "$TMP/base.sums" | sha256sum --quiet -c) > "$TMP/live.out" 2>&1; then
                cat "$TMP/live.out"
                for f in $(awk -F: '/FAILED/ { print $1 }' "$TMP/live.out"); do
                        echo "  $f: $(db "SELECT rf.position, rf.state, rf.reason FROM run_files rf JOIN files fl ON fl.id = rf.file_id WHERE rf.run_id = $run_id AND fl.path = '$MNT/${f#./}'")"
                        echo "    zero bytes: $(tr -d '\0' < "$MNT/$f" | wc -c) of $(stat -c %s "$MNT/$f") not zero; extents now: $(file_extents "$MNT/$f" | head -n 3 | tr '\n' ' ')"
                done
                echo "    position of done files: $(db "SELECT group_concat(position) FROM run_files WHERE run_id = $run_id AND state = 'done'")"
                CORRUPT=$((CORRUPT + 1)); run_fail "files read back wrong while the device fails"
        fi

        # heal; the daemon still answers; stop it
        ctl_fault ok
        ctl --json=short status > /dev/null || run_fail "seeklessd does not answer on the bus after healing"
        stop_daemon
        remount || { sleep 1; remount; } || run_fail "remount failed"
        rm -f "$MNT/filler"
        verify_checksums "$TMP/base.sums" || { CORRUPT=$((CORRUPT + 1)); run_fail "checksums differ"; }
        repaired=$(repair_kernel_errors)
        [ -z "$repaired" ] || KERNEL_ERRORS=$((KERNEL_ERRORS + 1))
        [ ! -s "$TMP/fsck-kernel.out" ] || grep -vE '^(Pass [1-5]|e2fsck |$)' "$TMP/fsck-kernel.out" | sed 's/^/    e2fsck -fn: /'
        acct=$(unaccounted)
        [ "$acct" = "$ACCT0" ] || { LEAKED=$((LEAKED + acct - ACCT0)); run_fail "blocks not accounted for: $ACCT0 before, $acct after"; }
        fsck_and_orphans
        bytes=$(awk '{ print $2 }' "$TMP/base.sums" | (cd "$MNT" && xargs -d '\n' stat -c %s) | awk '{ s += $1 } END { print s }')
        TOTAL_BYTES=$((TOTAL_BYTES + bytes)) TOTAL_FAULTS=$((TOTAL_FAULTS + werr + rerr))
        pass "$sc: run $state, $moved files moved, checksums equal after healing, blocks accounted, fsck clean${repaired:+ ($repaired)}"
done
done
echo "SUMMARY faults: runs=$((RUNS * ${#SCENARIOS[@]})) failed_requests=$TOTAL_FAULTS bytes_verified=$TOTAL_BYTES corruptions=$CORRUPT fsck_errors=$FSCKERR leaked_blocks=$LEAKED crashes=$CRASHES kernel_recorded_errors=$KERNEL_ERRORS"
