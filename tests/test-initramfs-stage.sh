#!/bin/bash
# The initramfs stage (seekless-initramfs(8)) on a loop-mounted ext4 that stands for the root filesystem,
# mounted read-only as an initramfs mounts it, with a real daemon's store on it: a boot recorded, a launch
# recorded, an optimize that left a running program queued. Each case runs the stage's program as the
# init-bottom script does (--root), and checks what it did independently of it: FIEMAP (filefrag) for the
# move, sha256sum for every file, the page-cache insertions of a tracefs instance of the test's own for the
# read-ahead, the mount's options, e2fsck -fn after. Then seeklessd shows what the stage wrote, and counts
# the boot whose files the stage read ahead as prefetched.
#   - seekless.initramfs=no: nothing read, nothing moved, the store's bytes unchanged;
#   - fsck.mode=force on the command line, or the root mounted read-write: the early pass skipped, the file
#     stays queued, the read-ahead happens;
#   - the normal case: the queued program moved, the root read-only again with its mount options, the boot
#     profile's files read ahead; a second run finds nothing queued and changes no byte of the store;
#   - no store, a corrupt one, one from a newer seekless: the stage does nothing and says why;
#   - a store that never opens (a FIFO): the hard time limit ends the stage, status "stopped", exit 0.
. "$(dirname "$0")/lib.sh"
: "${SEEKLESS_INITRAMFS:?run through meson test}"
# counts what the read-ahead inserted: no drop of every cache by a test beside meanwhile (tests/lib-core.sh)
caches_kept

setup_image 1G
STATE=$MNT/var/lib/seekless
mkdir -p "$STATE" "$MNT/etc" "$MNT/bin" "$RUN_DIR"
chmod 700 "$STATE"
boot_files=()
for f in a b c d; do head -c $((256 * 4096)) /dev/urandom > "$MNT/etc/$f"; boot_files+=("$MNT/etc/$f"); done
cp "$OPEN_FILES" "$MNT/bin/prog"
# the program is written in pieces between other writes, so that its move shows in FIEMAP
for _ in $(seq 8); do head -c 8192 /bin/sleep >> "$MNT/etc/pad"; sync; done
cat /bin/sleep > "$MNT/bin/sleeper"; chmod +x "$MNT/bin/sleeper"
sync
start_bus
write_config <<EOC
[Record]
BootWindowSec=5
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
EarlyBudgetSec=30
[Prefetch]
PrefetchMinAvailableMiB=0
PrefetchMaxMemoryPressure=100
EOC

# a boot that reads the four files, then a launch that reads the program
"$PAGE_TOUCH" $(printf 'drop:%s ' "${boot_files[@]}")
start_daemon --filesystem="$MNT" --boot-id=11111111111111111111111111111111
cat "${boot_files[@]}" > /dev/null
wait_until 60 boot_recording_over || fail "boot window did not close"
wait_until 30 has_profile boot || fail "boot profile not stored"
"$MNT/bin/prog" "$MNT/bin/sleeper" "$MNT/etc/pad"
wait_until 30 has_profile "$MNT/bin/prog" || fail "launch not recorded"
"$MNT/bin/sleeper" 600 &
SLEEPER=$!
EXTRA_PIDS+=($SLEEPER)
sleep 0.5
ctl --json=short optimize > "$TMP/opt.json" || fail "optimize failed: $(cat "$TMP/opt.json")"
jq -e --arg s "$MNT/bin/sleeper" 'any(.skipped[]; .path == $s and (.reason | test("running executable")))' \
        "$TMP/opt.json" >/dev/null || fail "the running program was not skipped: $(jq -c .skipped "$TMP/opt.json")"
stop_extra_pids
stop_daemon
pass "a boot and a launch recorded, the running program queued by the optimize"

first_block() { filefrag -v "$1" | awk '/^ *0:/ { print $4 }'; }
before=$(first_block "$MNT/bin/sleeper")
checksum_all "$TMP/sums.all"
grep -v ' ./var/lib/seekless/' "$TMP/sums.all" > "$TMP/sums"     # the store changes, the files must not
mount -o remount,ro "$MNT"
options=$(findmnt -no OPTIONS "$MNT")
case "$options" in ro,*) ;; *) fail "not read-only: $options" ;; esac
db_sum() { sha256sum < "$STATE/seekless.db"; }
db0=$(db_sum)
printf 'BOOT_IMAGE=/vmlinuz root=%s ro quiet\n' "$LOOP" > "$TMP/cmdline"

stage() {       # [CMDLINE-WORDS] [-- OPTIONS...]: runs the stage; its status in $TMP/status
        local words=${1:-}
        shift || true
        rm -f "$RUN_DIR/initramfs.status" "$RUN_DIR/initramfs.log"
        printf 'BOOT_IMAGE=/vmlinuz root=%s ro quiet %s\n' "$LOOP" "$words" > "$TMP/cmdline"
        inserts_start
        # as from the initramfs: its log to the file beside the status (and its summary to the kernel log)
        "$SEEKLESS_INITRAMFS" --root="$MNT" --config="$CONF" --cmdline="$TMP/cmdline" \
                --state-dir="$STATE" --status="$RUN_DIR/initramfs.status" --budget-ms=20000 --limit-sec=120 "$@" \
                > "$TMP/stage.out" 2>&1 ||
                fail "the stage exited with $?: $(cat "$TMP/stage.out" "$RUN_DIR/initramfs.log")"
        [ ! -s "$TMP/stage.out" ] || fail "the stage wrote to stderr: $(cat "$TMP/stage.out")"
        cp "$RUN_DIR/initramfs.log" "$TMP/stage.log" 2>/dev/null || : > "$TMP/stage.log"
        [ -s "$RUN_DIR/initramfs.status" ] || fail "no status: $(cat "$TMP/stage.log")"
        cp "$RUN_DIR/initramfs.status" "$TMP/status"
        grep -qF "$(st_of SUMMARY)" "$TMP/stage.log" || fail "the log lacks the summary: $(cat "$TMP/stage.log")"
}
st() { sed -n "s/^$1=//p" "$TMP/status"; }
st_of() { sed -n "s/^$1=//p" "$RUN_DIR/initramfs.status"; }
read_boot_files() { [ "$(inserted "${boot_files[@]}")" -ge $((4 * 256)) ]; }
drop_boot_files() { "$PAGE_TOUCH" $(printf 'drop:%s ' "${boot_files[@]}"); }

# off on the command line
drop_boot_files
stage seekless.initramfs=no
[ "$(st OUTCOME)" = off ] || fail "not off: $(cat "$TMP/status")"
[ "$(inserted "${boot_files[@]}")" = 0 ] || fail "read ahead while off: $(inserted "${boot_files[@]}") pages"
[ "$(first_block "$MNT/bin/sleeper")" = "$before" ] || fail "moved while off"
[ "$(db_sum)" = "$db0" ] || fail "the store changed while off"
pass "seekless.initramfs=no: '$(st SUMMARY)'; nothing read, nothing moved"

# a check asked for on the command line: no early pass, the read-ahead still
drop_boot_files
stage fsck.mode=force
[ "$(st EARLY_OUTCOME)" = skipped ] || fail "early pass not skipped under fsck.mode=force: $(cat "$TMP/status")"
st EARLY_SUMMARY | grep -q "fsck.mode=force" || fail "no reason: $(st EARLY_SUMMARY)"
[ "$(first_block "$MNT/bin/sleeper")" = "$before" ] || fail "moved under fsck.mode=force"
[ "$(findmnt -no OPTIONS "$MNT")" = "$options" ] || fail "mount options changed: $(findmnt -no OPTIONS "$MNT")"
[ "$(st OUTCOME)" = done ] || fail "no read-ahead: $(cat "$TMP/status")"
read_boot_files || fail "the boot files were not read ahead: $(inserted "${boot_files[@]}") pages; $(cat "$TMP/stage.log")"
[ "$(db_sum)" = "$db0" ] || fail "the store changed"
pass "fsck.mode=force: early pass '$(st EARLY_SUMMARY)'; '$(st SUMMARY)'"

# a root mounted read-write: no early pass either (it would come after the check's chance)
mount -o remount,rw "$MNT"
stage
[ "$(st EARLY_OUTCOME)" = skipped ] && st EARLY_SUMMARY | grep -q "read-write already" ||
        fail "early pass on a read-write root: $(cat "$TMP/status")"
[ "$(first_block "$MNT/bin/sleeper")" = "$before" ] || fail "moved on a read-write root"
mount -o remount,ro "$MNT"
pass "a read-write root: '$(st EARLY_SUMMARY)'"

# the normal case
drop_boot_files
stage
[ "$(st EARLY_OUTCOME)" = moved ] || fail "early pass: $(cat "$TMP/status"); $(cat "$TMP/stage.log")"
[ "$(st EARLY_MOVED)" = 1 ] && [ "$(st EARLY_QUEUED)" = 1 ] || fail "counts: $(cat "$TMP/status")"
after=$(first_block "$MNT/bin/sleeper")
[ "$after" != "$before" ] || fail "filefrag shows the program where it was ($before)"
[ "$(findmnt -no OPTIONS "$MNT")" = "$options" ] || fail "not read-only with its options again: $(findmnt -no OPTIONS "$MNT")"
grep -q "early pass: $MNT/bin/sleeper: moved" "$TMP/stage.log" || fail "the log does not say so: $(cat "$TMP/stage.log")"
[ "$(st OUTCOME)" = done ] && read_boot_files || fail "no read-ahead after the early pass: $(cat "$TMP/status")"
pass "moved the queued program (physical start $before -> $after), read-only again ($options); '$(st SUMMARY)'"

drop_image_pages
verify_checksums "$TMP/sums"
"$MNT/bin/sleeper" 0 || fail "the moved program does not run"
pass "every file's content unchanged; the moved program runs"

# again: nothing queued, and the store read without a byte written
db1=$(db_sum)
drop_boot_files
stage
[ "$(st EARLY_OUTCOME)" = nothing-queued ] || fail "queued again: $(cat "$TMP/status")"
[ "$(db_sum)" = "$db1" ] && [ ! -e "$STATE/seekless.db-wal" ] || fail "the store changed on a read-only run"
pass "a second run: '$(st EARLY_SUMMARY)', the store unchanged"

# what seeklessd makes of the status: the property, seeklessctl status, its JSON
fsck_clean
start_daemon --filesystem="$MNT" --boot-id=22222222222222222222222222222222
ctl status > "$TMP/status.txt" || fail "status failed"
grep -q "^ *Initramfs: read ahead" "$TMP/status.txt" || fail "no Initramfs line: $(cat "$TMP/status.txt")"
grep -q "^ *Early pass: no file queued" "$TMP/status.txt" || fail "no Early pass line: $(cat "$TMP/status.txt")"
ctl --json=short status | jq -e '.initramfs_stage.outcome == "done" and .initramfs_stage.early_outcome == "nothing-queued"' \
        >/dev/null || fail "JSON: $(ctl --json=short status | jq -c .initramfs_stage)"
# what the stage read was read for this boot: its session counts as prefetched (profile.c keeps ranges)
grep -q "The initramfs stage read 4.0 MiB of the boot profile ahead" "$DAEMON_LOG" ||
        fail "the boot session was not marked prefetched: $(grep -i prefetch "$DAEMON_LOG" | tail -n 5)"
stop_daemon
rm -f "$RUN_DIR/initramfs.status"
start_daemon --filesystem="$MNT" --boot-id=33333333333333333333333333333333
ctl --json=short status | jq -e '.initramfs_stage.outcome == "none"' >/dev/null ||
        fail "without a status: $(ctl --json=short status | jq -c .initramfs_stage)"
stop_daemon
pass "seeklessctl status: '$(grep "Initramfs:" "$TMP/status.txt" | sed 's/^ *//')'; none without a status"

# stores the stage does not read
mkdir -p "$TMP/none" "$TMP/corrupt" "$TMP/newer"
head -c 65536 /dev/urandom > "$TMP/corrupt/seekless.db"
cp "$STATE/seekless.db" "$TMP/newer/seekless.db"
sqlite3 "$TMP/newer/seekless.db" "PRAGMA user_version = $(( $(sqlite3 "$STATE/seekless.db" 'PRAGMA user_version') + 1 ))"
mount -o remount,ro "$MNT"
for kind in none corrupt newer; do
        sum=$(sha256sum < "$TMP/$kind/seekless.db" 2>/dev/null || true)
        drop_boot_files
        stage "" --state-dir="$TMP/$kind"
        [ "$(st OUTCOME)" = skipped ] || fail "$kind: $(cat "$TMP/status")"
        [ "$(inserted "${boot_files[@]}")" = 0 ] || fail "$kind: read ahead"
        [ "$(sha256sum < "$TMP/$kind/seekless.db" 2>/dev/null || true)" = "$sum" ] || fail "$kind: the file changed"
        echo "  $kind: '$(st SUMMARY)'"
done
pass "no store, a corrupt one, a newer one: skipped, nothing read, nothing changed"

# the hard limit: a store that never opens
mkdir -p "$TMP/fifo"
mkfifo "$TMP/fifo/seekless.db"
stage "" --state-dir="$TMP/fifo" --limit-sec=1
[ "$(st OUTCOME)" = stopped ] || fail "not stopped at the limit: $(cat "$TMP/status")"
pass "a store that never opens: '$(st SUMMARY)', exit 0"

# the init-bottom script (as built): a stage whose hard limit ended it with the root read-write (a stub
# that remounts it so) leaves it to the script, which makes it read-only again when initramfs-tools mounted
# it so (readonly=y), and leaves a root the command line asked read-write (readonly=n) as it is
sed "s|[^ \"]*/seekless/seekless-initramfs|$TMP/stub|g" "$BUILD_ROOT/initramfs-tools/seekless-init-bottom" > "$TMP/init-bottom"
grep -q "$TMP/stub --root=" "$TMP/init-bottom" || fail "the script does not run the stage: $(cat "$TMP/init-bottom")"
printf '#!/bin/sh\nmount -o remount,rw "%s"\nexit 1\n' "$MNT" > "$TMP/stub"
chmod +x "$TMP/stub"
rootmnt=$MNT readonly=y sh "$TMP/init-bottom" || fail "the script failed"
case "$(findmnt -no OPTIONS "$MNT")" in ro,*) ;; *) fail "left read-write: $(findmnt -no OPTIONS "$MNT")" ;; esac
rootmnt=$MNT readonly=n sh "$TMP/init-bottom" || fail "the script failed"
case "$(findmnt -no OPTIONS "$MNT")" in rw,*) ;; *) fail "made read-only with readonly=n: $(findmnt -no OPTIONS "$MNT")" ;; esac
pass "init-bottom: exits 0 whatever the stage did; a root left read-write made read-only again (readonly=y only)"

fsck_clean
pass "e2fsck -fn clean"
