#!/bin/bash
# Safety campaign 3 (issue 21): power cuts during a relocation run on the guest's root filesystem. RUNS runs
# (default 1: the CI version; by hand RUNS=20 or more, bench/README.md "Safety campaigns"). Each run:
#   1. the guest (powercut-run.sh) has a launch profile of NFILES scattered files of random data on its root
#      filesystem and the sha256, mtime and size of every file of every profile; it accounts the blocks,
#      starts `seeklessctl optimize --no-block` and prints "POWERCUT-ARM";
#   2. the host kills QEMU with SIGKILL a random moment later (uniform in [0, CUT_MAX) s, seeded): no
#      shutdown, no flush (vm-lib.sh, VM_CUT_ON);
#   3. on a copy of the root disk as the cut left it: `e2fsck -fn` (reported: an unreplayed journal may leave
#      it inconsistent), then e2fsck's own journal replay (which frees the donor, an unnamed O_TMPFILE on the
#      orphan list) and `e2fsck -fn` again, which must be clean; every file of the base image compared with
#      it (debugfs rdump; the files whose size and mtime are unchanged must be equal); the daemon's database
#      (sqlite3 integrity_check) and what it held: the run and its files' checkpoints. If the mover had
#      begun (a donor on the orphan list), the run must be there;
#   4. the same disks boot again: the kernel replays the journal; the daemon resumes the run left `running`
#      (its "N of M files still to do" must be the pending rows at the cut) and finishes it (no run stored,
#      or one finished: `seeklessctl optimize` does the rest); every profile file with its setup mtime and
#      size has its sha256; the blocks are accounted as before the run; then a clean power-off;
#   5. the root disk from the host: `e2fsck -fn` clean, no orphan inode in the superblock, every file of the
#      base image compared again.
# The disk cache is QEMU's cache=writeback (vm-lib.sh), under which the guest's flushes are the only
# barrier: a write the guest flushed is in the overlay file after the SIGKILL, one it had not flushed is
# lost when it allocated a new cluster of the qcow2 overlay, as most of a run's writes do (each vm_boot has a
# fresh overlay). cache=unsafe behaves the same on a SIGKILL (it skips only the host's fdatasync, which
# matters when the host dies, not QEMU); directsync would lose nothing (tests/vm/README.md has the measure).
# RUNS=1 sets up and cuts in the first boot (two boots in all); with more, one boot sets up a base image that
# every run starts from (two boots each). SEED=4, CUT_MAX=12 put the CI's one cut 6.7 s after the arm line,
# within the run (about 10 s here with the machine otherwise idle, more when loaded). Prints one line per run
# and a SUMMARY line.
#   usage: test-vm-powercut.sh [WORK_DIR]   (default $SEEKLESS_VM_WORK_DIR, else /var/tmp/seekless-vm; exits 77 = skip without root/qemu)
#   env:   RUNS SEED CUT_MAX (s) NFILES MAXKIB RATE (RateLimitMiBps= of the run; 0 = none) VM_NO_BUILD=1
#          VERBOSE=1 (the guest's output of every run, not only with RUNS=1);
#          FAULT=corrupt (512 bytes of a profile file changed on the disk at the cut: the guest's sha256 must
#          fail), FAULT=corrupt-other (the same in a base image file no profile has: the host's comparison
#          must fail); SCATTER, OPEN_FILES = the test helpers (set by meson)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-${SEEKLESS_VM_WORK_DIR:-/var/tmp/seekless-vm}}
: "${SCATTER:?run through meson test (SCATTER is the tests/scatter helper)}"
: "${OPEN_FILES:?run through meson test (OPEN_FILES is the tests/open-files helper)}"
. "$HERE/vm-lib.sh"
vm_skip_unless_able
command -v sqlite3 >/dev/null || { echo "SKIP: sqlite3 not installed"; exit 77; }
RUNS=${RUNS:-1} SEED=${SEED:-4} CUT_MAX=${CUT_MAX:-12} NFILES=${NFILES:-100} MAXKIB=${MAXKIB:-512} RATE=${RATE:-0}
FAULT=${FAULT:-}
vm_image "$W"
W=$(realpath "$W")
APPEND0=${VM_APPEND:-}

fail() { echo "FAIL: run ${RUN:-setup}: $*"; exit 1; }

data_disk() {           # IMG MODE
        local d=$VM_TMP/data
        rm -rf "$d" && mkdir "$d"
        install -m755 "$HERE/powercut-run.sh" "$d/run.sh"
        install -m755 "$SCATTER" "$d/scatter"
        install -m755 "$OPEN_FILES" "$d/prog"
        echo "$2" > "$d/mode"
        echo "$NFILES" > "$d/nfiles"
        echo "$MAXKIB" > "$d/maxkib"
        echo "$SEED" > "$d/seed"
        echo "$RATE" > "$d/rate"
        vm_data_disk "$d" "$1"
}

# Every regular file of a root image against the base image, read with debugfs (neither the guest's kernel
# nor the daemon is asked): a file whose size and mtime are the base's must have its contents (one the
# guest rewrote since has another mtime). Prints "FILES BYTES CHANGED BAD"; the bad ones go to DIR.bad.
tree_dump() {           # RAW DIR
        rm -rf "$2" && mkdir -p "$2"
        debugfs -R "rdump / $2" "$1" >/dev/null 2>&1 || true
        (cd "$2" && find . -type f -printf '%s %T@ %P\n') | sort -k3 > "$2.list"
}
tree_compare() {        # BASE_DIR DIR
        python3 - "$1" "$2" <<'EOP'
import filecmp, sys
def listing(d):
    with open(d + ".list") as f:
        return {p: (size, mtime) for size, mtime, p in (l.rstrip("\n").split(" ", 2) for l in f)}
base, new = listing(sys.argv[1]), listing(sys.argv[2])
n = nbytes = changed = 0
bad = []
for p, meta in new.items():
    if p not in base:
        continue
    if base[p] != meta:
        changed += 1
        continue
    n += 1
    nbytes += int(meta[0])
    if not filecmp.cmp(sys.argv[1] + "/" + p, sys.argv[2] + "/" + p, shallow=False):
        bad.append(p)
with open(sys.argv[2] + ".bad", "w") as f:
    f.writelines(p + "\n" for p in bad)
print(n, nbytes, changed, len(bad))
EOP
}
base_tree() {           # RAW: dump the base image once
        tree_dump "$1" "$VM_TMP/tree.base"
}

# debugfs -f output of "blocks" commands -> one line per file: its block list ("-" when it has none there)
blocks_by_file() {
        awk '/^debugfs: blocks/ { if (seen) print (line == "" ? "-" : line); seen = 1; line = ""; next }
             { line = line $0 } END { if (seen) print (line == "" ? "-" : line) }'
}

guest_log() { sed -n 's/^ *\([0-9.]*\) \(GUEST: \|VMTEST: \|POWERCUT\)/\1 \2/p; /vm_boot: /p' "$1"; }

# The root disk as the cut left it (vm_boot's VM_CUT_HOOK: QEMU is dead, the next one not started yet).
# Tells the next boot, on its kernel command line, what the database held.
cut_hook() {            # OVERLAY K
        local raw=$VM_TMP/cut.raw d=$VM_TMP/run.$RUN id state pend total done_n
        mkdir -p "$d/db"
        qemu-img convert -O raw "$1" "$raw"
        e2fsck -fn "$raw" > "$d/fsck-n.out" 2>&1; echo $? > "$d/fsck-n.rc"
        # e2fsck's journal replay on the copy, then the whole check (the orphan list is the next mount's job)
        e2fsck -E journal_only -p "$raw" > "$d/replay.out" 2>&1; echo $? > "$d/replay.rc"
        e2fsck -fn "$raw" > "$d/fsck.out" 2>&1; echo $? > "$d/fsck.rc"
        tree_dump "$raw" "$VM_TMP/tree.cut"
        tree_compare "$VM_TMP/tree.base" "$VM_TMP/tree.cut" > "$d/tree-cut"
        cp "$VM_TMP/tree.cut.bad" "$d/tree-cut.bad"
        rm -rf "$VM_TMP/tree.cut"
        # how far the mover had come, by the filesystem: profile files whose blocks are not the base image's
        debugfs -R "cat /opt/powercut/sums" "$raw" 2>/dev/null | cut -d' ' -f4- |
                sed 's/^/blocks "/; s/$/"/' > "$VM_TMP/blocks.cmd"
        debugfs -f "$VM_TMP/blocks.cmd" "$BASE/disk.img" 2>/dev/null > "$VM_TMP/blocks.base"
        debugfs -f "$VM_TMP/blocks.cmd" "$raw" 2>/dev/null > "$VM_TMP/blocks.cut"
        paste -d'\n' <(blocks_by_file < "$VM_TMP/blocks.base") <(blocks_by_file < "$VM_TMP/blocks.cut") |
                awk 'NR % 2 { b = $0; next } b != "" && b != "-" { n++; if ($0 != b) m++ } END { print m + 0, n + 0 }' > "$d/moved"
        # kept for the count of blocks moved twice (moved_twice), with the cut image's file list
        blocks_by_file < "$VM_TMP/blocks.base" > "$d/blocks.base"
        blocks_by_file < "$VM_TMP/blocks.cut" > "$d/blocks.cut"
        cp "$VM_TMP/blocks.cmd" "$d/blocks.cmd"
        cp "$VM_TMP/tree.cut.list" "$d/tree.cut.list"
        # the orphans e2fsck freed (the donor: an unnamed O_TMPFILE, 8 TiB long for its pilot block)
        sed -n 's/.*Clearing orphaned inode \([0-9]*\) .*size=\([0-9]*\).*/\1 (size \2)/p' "$d/replay.out" | paste -sd, > "$d/orphan"
        for f in seekless.db seekless.db-wal; do
                debugfs -R "dump /var/lib/seekless/$f $d/db/$f" "$raw" >/dev/null 2>&1 || true
        done
        [ -s "$d/db/seekless.db-wal" ] || rm -f "$d/db/seekless.db-wal"
        sqlite3 "$d/db/seekless.db" "PRAGMA integrity_check" > "$d/db.check" 2>&1 || true
        id=$(vm_out "$DATA" run.json | jq -r .id)
        state=$(sqlite3 "$d/db/seekless.db" "SELECT state FROM runs WHERE id = $id" 2>/dev/null || true)
        pend=$(sqlite3 "$d/db/seekless.db" "SELECT COUNT(*) FROM run_files WHERE run_id = $id AND state = 'pending'" 2>/dev/null || echo 0)
        total=$(sqlite3 "$d/db/seekless.db" "SELECT COUNT(*) FROM run_files WHERE run_id = $id" 2>/dev/null || echo 0)
        # per file of the run: its entries still pending and done at the cut (a file's hot ranges are entries)
        sqlite3 -separator ' ' "$d/db/seekless.db" "SELECT SUM(rf.state = 'pending'), SUM(rf.state = 'done'), f.path
                FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = $id GROUP BY f.path" \
                > "$d/checkpoints" 2>/dev/null || true
        done_n=$((total - pend))
        case $state in
        running)  echo "resume:$id:$pend:$total" > "$d/expect"
                  if [ "$done_n" = 0 ]; then echo "before the first file was checkpointed ($total to do)"
                  elif [ "$pend" = 0 ]; then echo "every file checkpointed, the run not yet marked finished"
                  else echo "moving ($done_n of $total files checkpointed)"; fi > "$d/phase" ;;
        "")       echo none > "$d/expect"; echo "before the run was stored" > "$d/phase" ;;
        *)        echo "done:$id" > "$d/expect"; echo "after the run ($state)" > "$d/phase" ;;
        esac
        if [ -n "$FAULT" ]; then
                # 512 bytes of a file changed "by the cut", on the disk the next boot gets: a profile file
                # (the guest's sha256 must see it) or a file of the base image no profile has (the host's
                # comparison must)
                local f=/opt/powercut/data/f1 blk
                [ "$FAULT" = corrupt-other ] && f=/usr/share/common-licenses/Apache-2.0
                blk=$(debugfs -R "blocks $f" "$raw" 2>/dev/null | awk '{ print $1 }')
                [ -n "$blk" ] && qemu-io -f qcow2 -c "write -P 0x58 $((blk * 4096)) 512" "$1" >/dev/null
        fi
        rm -f "$raw"
        VM_APPEND="$APPEND0 powercut.expect=$(cat "$d/expect")"
}

# One vm_boot: cut once (RUNS=1: after setting up), boot again, verify; then the host's checks.
one_run() {             # BASE_DIR DELAY
        local log=$VM_TMP/console.$RUN.log d=$VM_TMP/run.$RUN rc=0 raw=$VM_TMP/final.raw
        DATA=$VM_TMP/data.$RUN.img
        data_disk "$DATA" cut
        VM_APPEND=$APPEND0 VM_CUT_ON='^POWERCUT-ARM' VM_CUT_DELAY=$2 VM_CUT_HOOK=cut_hook \
                VM_TIMEOUT=${VM_TIMEOUT:-1200} vm_boot "$1" "$DATA" "$log" || rc=$?
        # another VM test may boot between runs, unless this run's overlay is on the shared WORK_DIR's image,
        # which the host reads below and another test's build would rewrite (RUNS=1)
        [ "$1" = "$W" ] || { exec {VM_LOCK_FD}>&- && VM_LOCK_FD=; }
        guest_log "$log" > "$d.guest"
        vm_out "$DATA" out.boot1.log 2>/dev/null | sed 's/^/  boot 1: /' > "$d.boot1" || true
        if [ "$rc" != 0 ] || [ "$(vm_out "$DATA" rc 2>/dev/null)" != 0 ] || ! grep -q "vm_boot: power cut 1:" "$log"; then
                cat "$d.boot1" "$d.guest"; echo "---- serial console (last 40 lines) ----"; tail -n 40 "$log"
                [ "$rc" = 0 ] || fail "qemu exited $rc (124 = the guest did not power off in time)"
                grep -q "vm_boot: power cut 1:" "$log" || fail "no power cut happened"
                fail "the guest's checks failed (exit $(vm_out "$DATA" rc 2>/dev/null || echo none))"
        fi
        # the cut image: before the replay only the journal may be pending; after e2fsck's replay, clean
        [ "$(cat "$d/replay.rc")" -le 1 ] || { cat "$d/replay.out"; fail "e2fsck's journal replay failed"; }
        [ "$(cat "$d/fsck.rc")" = 0 ] || { cat "$d/fsck.out"; fail "e2fsck -fn after the journal replay found problems"; }
        [ "$(cat "$d/db.check")" = ok ] || fail "the database at the cut: $(cat "$d/db.check")"
        # a donor on the orphan list: the mover had begun, so the run must be in the database to be resumed
        [ ! -s "$d/orphan" ] || [ "$(cat "$d/expect")" != none ] ||
                fail "the mover had begun (its donor, inode $(cat "$d/orphan"), was on the orphan list) but the database at the cut held no run"
        # the root disk after the second boot's power-off
        qemu-img convert -O raw "$VM_OVERLAY" "$raw"
        e2fsck -fn "$raw" > "$d/final-fsck.out" 2>&1 || { cat "$d/final-fsck.out"; fail "e2fsck -fn of the final image found problems"; }
        local orphan; orphan=$(dumpe2fs -h "$raw" 2>/dev/null | grep -i 'orphan' || true)
        [ -z "$orphan" ] || fail "the superblock still lists orphan inodes: $orphan"
        tree_dump "$raw" "$VM_TMP/tree.final"
        tree_compare "$VM_TMP/tree.base" "$VM_TMP/tree.final" > "$d/tree-final"
        debugfs -f "$d/blocks.cmd" "$raw" 2>/dev/null | blocks_by_file > "$d/blocks.final"
        moved_twice "$d" > "$d/twice"
        rm -rf "$VM_TMP/tree.final" "$raw"
        local n bytes changed bad
        read -r n bytes changed bad < "$d/tree-cut"
        [ "$bad" = 0 ] || fail "$bad file(s) of the base image differ on the cut image (after e2fsck's replay): $(head -n 5 "$d/tree-cut.bad" | paste -sd' ')"
        read -r n bytes changed bad < "$d/tree-final"
        [ "$bad" = 0 ] || fail "$bad file(s) of the base image differ at the end: $(head -n 5 "$VM_TMP/tree.final.bad" | paste -sd' ')"
        local twice; read -r _ twice _ < "$d/twice"
        if [ "$twice" != 0 ] && [[ $(cat "$d/expect") == resume:* ]]; then
                cat "$d/twice.files"
                fail "$twice file(s) moved twice: blocks moved before the cut (on the disk as cut) and again by the resumed run"
        fi
        TREE_FILES=$((TREE_FILES + n)) TREE_BYTES=$((TREE_BYTES + bytes))
        vm_out "$DATA" result > "$d/result"
        [ "$RUNS" != 1 ] && [ "${VERBOSE:-0}" != 1 ] || cat "$d.boot1" "$d.guest"
        local cut_at; cut_at=$(sed -n 's/^ *\([0-9.]*\) vm_boot: power cut 1:.*/\1/p' "$log")
        local arm_at; arm_at=$(sed -n 's/^ *\([0-9.]*\) POWERCUT-ARM.*/\1/p' "$log" | head -n1)
        echo "run $RUN: cut $2 s after the arm line (+$arm_at s .. +$cut_at s): $(cat "$d/phase"), $(read -r m t < "$d/moved"; echo "$m of the $t profile files of the base image moved"); e2fsck -fn before the replay: exit $(cat "$d/fsck-n.rc")$(x=$(fsck_n_extra "$d/fsck-n.out"); [ -z "$x" ] && echo ", only the skipped journal recovery" || echo ": $x"); after e2fsck's replay: clean; orphans e2fsck freed: $(cat "$d/orphan"); resumed: $(res resumed); profile files verified in the guest: $(res files_verified) ($(res bytes_verified) bytes); files of the base image compared from the host at the cut and at the end: $(cut -d' ' -f1 "$d/tree-cut") and $(cut -d' ' -f1 "$d/tree-final") ($(cut -d' ' -f3 "$d/tree-final") rewritten by the system); blocks accounted $(res acct_before) -> $(res acct_after); discontinuities $(res disc); $(read -r m t b p u < "$d/twice"; echo "files moved twice $t ($b blocks; of the $m moved at the cut, $p had no checkpoint on the disk; $u checkpointed done kept their old blocks)"); final e2fsck -fn clean, no orphan"
}
res() { sed -n "s/^$1=//p" "$VM_TMP/run.$RUN/result" | tail -n1; }

# Blocks moved twice, from the disks alone: a profile file's logical block whose physical block differs
# between the base image and the image as cut (moved, and the move on the disk) and again between that and
# the final image (moved once more after the cut). Only files with the base's size and mtime in both.
# Against that, the run store at the cut: how many of the files moved by then had every entry still
# pending (a resume moves them again), and how many had an entry done without a block moved (the move
# did not reach the disk; the file keeps its old blocks). Prints "MOVED_AT_CUT TWICE_FILES TWICE_BLOCKS
# MOVED_PENDING DONE_UNMOVED"; DIR/twice.files names the files moved twice.
moved_twice() {         # DIR (run.K, from cut_hook)
        python3 - "$1" "$VM_TMP/tree.base.list" "$VM_TMP/tree.final.list" <<'EOP'
import sys
d, base_list, final_list = sys.argv[1:4]
def listing(p):
    with open(p) as f:
        return {q: (size, mtime) for size, mtime, q in (l.rstrip("\n").split(" ", 2) for l in f)}
def lines(p):
    with open(p) as f:
        return [l.rstrip("\n") for l in f]
base_meta, cut_meta, final_meta = listing(base_list), listing(d + "/tree.cut.list"), listing(final_list)
paths = [l.split('"')[1] for l in lines(d + "/blocks.cmd")]
b, c, f = lines(d + "/blocks.base"), lines(d + "/blocks.cut"), lines(d + "/blocks.final")
ckpt = {}
try:
    for l in lines(d + "/checkpoints"):
        pend, done, p = l.split(" ", 2)
        ckpt[p] = (int(pend or 0), int(done or 0))
except FileNotFoundError:
    pass
moved = twice_files = twice_blocks = moved_pending = done_unmoved = 0
names = []
for p, bb, cc, ff in zip(paths, b, c, f):
    rel = p.lstrip("/")
    m = base_meta.get(rel)
    if m is None or cut_meta.get(rel) != m or final_meta.get(rel) != m or bb in ("", "-"):
        continue
    bb, cc, ff = bb.split(), cc.split(), ff.split()
    if not (len(bb) == len(cc) == len(ff)):
        continue
    at_cut = bb != cc
    moved += at_cut
    n = sum(1 for x, y, z in zip(bb, cc, ff) if x != y and y != z)
    if n:
        twice_files += 1
        twice_blocks += n
        names.append("moved twice: %s (%d of %d blocks)" % (p, n, len(bb)))
    pend, done = ckpt.get(p, (0, 0))
    if at_cut and pend > 0 and done == 0:
        moved_pending += 1
    if not at_cut and done > 0:
        done_unmoved += 1
with open(d + "/twice.files", "w") as out:
    out.writelines(x + "\n" for x in names)
print(moved, twice_files, twice_blocks, moved_pending, done_unmoved)
EOP
}
# what e2fsck -n said of the unreplayed image beyond the skipped recovery and the free counts (which ext4
# does not keep up to date in the superblock): an unreplayed image may be inconsistent (a checkpoint cut
# half-way), so this is reported, not judged
fsck_n_extra() {
        grep -v -E '^(e2fsck [0-9]|Warning: skipping journal recovery|Pass [1-5]|Free (blocks|inodes) count wrong|Fix\? no$|$|[^ ]+: [0-9]+/[0-9]+ files)' "$1" |
                head -n 3 | cut -c1-100 | paste -sd';'
}

t_all=$SECONDS TREE_FILES=0 TREE_BYTES=0
if [ "$RUNS" = 1 ]; then
        BASE=$W
else
        # one boot sets up the base image every run starts from
        RUN=setup
        data_disk "$VM_TMP/data.setup.img" setup
        rc=0
        VM_TIMEOUT=${VM_TIMEOUT:-1200} vm_boot "$W" "$VM_TMP/data.setup.img" "$VM_TMP/console.setup.log" || rc=$?
        guest_log "$VM_TMP/console.setup.log"
        [ "$rc" = 0 ] && [ "$(vm_out "$VM_TMP/data.setup.img" rc 2>/dev/null)" = 0 ] || fail "the setup boot failed"
        BASE=$VM_TMP/base
        mkdir -p "$BASE"
        # the overlay reads the shared image, and the kernel is the shared one: copied while no other test
        # may rebuild them
        cp -a "$W/kernel" "$BASE/kernel"
        qemu-img convert -O raw "$VM_OVERLAY" "$BASE/disk.img"
        exec {VM_LOCK_FD}>&- && VM_LOCK_FD=
        e2fsck -fn "$BASE/disk.img" > "$VM_TMP/base-fsck.out" 2>&1 || { cat "$VM_TMP/base-fsck.out"; fail "the base image is not clean"; }
fi
base_tree "$BASE/disk.img"
declare -A PHASES=()
TOTAL_BYTES=0 TOTAL_FILES=0 RESUMED=0 MOVING=0 TWICE=0 TWICE_OTHER=0 MOVED_PENDING=0 DONE_UNMOVED=0
for ((RUN = 1; RUN <= RUNS; RUN++)); do
        RANDOM=$((SEED * 7919 + RUN))
        ms=$(( ((RANDOM << 15) | RANDOM) % (CUT_MAX * 1000) ))
        delay=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
        t0=$SECONDS
        one_run "$BASE" "$delay"
        echo "  ($((SECONDS - t0)) s)"
        p=$(cat "$VM_TMP/run.$RUN/phase"); p=${p%% (*}
        PHASES[$p]=$(( ${PHASES[$p]:-0} + 1 ))
        TOTAL_BYTES=$((TOTAL_BYTES + $(res bytes_verified))) TOTAL_FILES=$((TOTAL_FILES + $(res files_verified)))
        [ "$(res resumed)" = none ] || RESUMED=$((RESUMED + 1))
        read -r m t _ mp du < "$VM_TMP/run.$RUN/twice"
        # while files move: some moved on the disk as cut, some still pending
        IFS=: read -r kind _ pend _ < "$VM_TMP/run.$RUN/expect"
        [ "$m" = 0 ] || [ "$kind" != resume ] || [ "$pend" = 0 ] || MOVING=$((MOVING + 1))
        if [[ $(cat "$VM_TMP/run.$RUN/expect") == resume:* ]]; then TWICE=$((TWICE + t)); else TWICE_OTHER=$((TWICE_OTHER + t)); fi
        MOVED_PENDING=$((MOVED_PENDING + mp)) DONE_UNMOVED=$((DONE_UNMOVED + du))
done
echo "SUMMARY power-cut campaign: runs=$RUNS seed=$SEED cut_max=${CUT_MAX}s rate=$RATE cuts=$RUNS resumed=$RESUMED cuts_while_moving=$MOVING files_moved_twice=$TWICE moved_without_checkpoint=$MOVED_PENDING checkpoint_without_move=$DONE_UNMOVED moved_again_by_a_new_run=$TWICE_OTHER files_verified=$TOTAL_FILES bytes_verified=$TOTAL_BYTES host_files_compared=$TREE_FILES host_bytes_compared=$TREE_BYTES corruptions=0 fsck_errors=0 leaked_blocks=0 ($((SECONDS - t_all)) s)"
for p in "${!PHASES[@]}"; do echo "  cut $p: ${PHASES[$p]}"; done
echo "ok: $RUNS power cut(s) during a relocation run: journal replayed, e2fsck clean, checksums match, blocks accounted, the run resumed ($RESUMED) or done anew"
