#!/bin/bash
# Recording at page granularity (doc/page-recording.md §5), against the real tracepoint in a tracefs
# instance of the daemon's own, a real ext4 image and a private bus.
# 1. Without tracefs (--tracefs= pointing nowhere) the daemon says so once and records whole files; a file
#    only mapped (opened, mmap()ed, closed, then read through page faults: no read()) is in the launch
#    profile at the position of its close (FAN_CLOSE_NOWRITE).
# 2. With tracefs: a launch maps a 100 MiB file with MADV_RANDOM and touches pages 1000-1999: the session
#    holds exactly that range of it; and two files read interleaved with POSIX_FADV_RANDOM (A 0-40 KiB,
#    B 0-40 KiB, A 40-80 KiB) make three ranges in that order; a read by a second thread, which has
#    exited by the time its page event is taken, counts for the launch (the thread's process comes from
#    the kernel's process events); a file the launch creates and writes is not in the session (its pages
#    were written, not read: left out by its birth time).
#    The boot session takes the pages of every process but the daemon's. The ranges are read from the daemon's
#    debug log ("Page range N of PROFILE: PATH pages FIRST-LAST"), which tells each stored range.
# 3. The event is on only while a window is open; the instance goes at exit, also when tracefs was lazily
#    unmounted under the daemon while a window had the event on.
# 4. Overflow: with the daemon stopped (SIGSTOP) during a launch, a program pinned to one CPU faults in
#    25,600 pages, more than the 1 MiB per-CPU buffer holds (~23,500 events): the kernel's lost count
#    grows, and the session is stored as incomplete.
. "$(dirname "$0")/lib.sh"

: "${PAGE_TOUCH:?run through meson test}"
setup_image
TRACEFS=$TMP/tracefs
mkdir -p "$TRACEFS"
mount -t tracefs nodev "$TRACEFS" || { echo "SKIP: no tracefs"; exit 77; }
EXTRA_MOUNTS+=("$TRACEFS")
[ -e "$TRACEFS/events/filemap/mm_filemap_add_to_page_cache" ] || { echo "SKIP: no page-cache tracepoint"; exit 77; }

mkdir -p "$MNT/bin" "$MNT/d"
cp "$PAGE_TOUCH" "$MNT/bin/prog"
head -c 20000 /dev/urandom > "$MNT/d/x"
head -c 300000 /dev/urandom > "$MNT/d/mapped"
head -c 20000 /dev/urandom > "$MNT/d/y"
head -c 100M /dev/urandom > "$MNT/d/big"
head -c 80K /dev/urandom > "$MNT/d/a"
head -c 80K /dev/urandom > "$MNT/d/b"
head -c 80K /dev/urandom > "$MNT/d/c"
head -c 80K /dev/urandom > "$MNT/d/w"
sync
P=$MNT/bin/prog D=$MNT/d

launched() {
        ctl --json=short profiles | jq -e --arg n "$P" --argjson k "$1" 'any(.[]; .name == $n and .sessions == $k)'
}

# ---- 1. no tracefs: whole files; the mapped-only file by its close ----
start_recording --filesystem="$MNT" --tracefs="$TMP/no-tracefs" <<EOC
MaxLaunchesPerBoot=10
EOC
grep -q "No page-cache events" "$DAEMON_LOG" || fail "no word of the missing tracefs"
"$PAGE_TOUCH" drop:"$D/mapped"
"$P" read:"$D/x" map:"$D/mapped" read:"$D/y"
wait_until 30 launched 1 || fail "launch was not recorded"
got=$(profile_paths "$P" | tr '\n' ' ')
[ "$got" = "$P $D/x $D/mapped $D/y " ] || fail "profile order: got [$got], want [$P $D/x $D/mapped $D/y]"
grep -q "Page range" "$DAEMON_LOG" && fail "page ranges without page events"
pass "without tracefs: whole files, the mapped-only file at its place"
ctl forget "$P"
stop_daemon
[ "$(grep -c "No page-cache events" "$DAEMON_LOG")" = 1 ] || fail "the missing tracefs was logged more than once"

# ---- 2. with tracefs ----
mv "$DAEMON_LOG" "$TMP/daemon-1.log"
"$PAGE_TOUCH" drop:"$D/x"
write_config <<EOC
[Record]
BootWindowSec=3
LaunchWindowSec=2
MaxLaunchesPerBoot=10
EOC
start_daemon --filesystem="$MNT" --tracefs="$TRACEFS"
"$PAGE_TOUCH" fadv:"$D/x":0:8192        # not on the image: only the boot session has it
# the directory's block leaves the block device's cache (a freeze checkpoints the journal, so that no
# metadata buffer stays dirty), and is read again: a metadata page
fsfreeze -f "$MNT" && fsfreeze -u "$MNT"
blockdev --flushbufs "$LOOP"
ls "$D" > /dev/null
wait_until 30 boot_recording_over || fail "boot window did not close"
wait_until 10 grep -q "Page range 1 of boot: $D/x pages 0-1 at" "$DAEMON_LOG" ||
        fail "the boot session lacks the pages read during its window: $(grep "of boot:" "$DAEMON_LOG")"
wait_until 10 grep -q "The boot session of boot holds 1 page range (0 page events lost, [1-9][0-9]* ranges\? of filesystem metadata, 0 more metadata events not kept, [0-9]* files\? partly cached before: counted as cached)" "$DAEMON_LOG" ||
        fail "no metadata ranges kept: $(grep "session of boot holds" "$DAEMON_LOG")"
pass "the boot session has the pages read during its window"
# the directory's block, by debugfs (not by the daemon): its byte offset on the device is in one of the
# boot profile's metadata ranges, on this filesystem
bsize=$(stat -f -c %S "$MNT")
dblk=$(debugfs -R "bmap /d 0" "$LOOP" 2>/dev/null)
[[ $dblk =~ ^[0-9]+$ ]] || fail "debugfs gave no block for /d: [$dblk]"
ctl --json=short show boot | jq -e --arg m "$MNT" --argjson o $((dblk * bsize)) \
        'any(.metadata[]; .filesystem == $m and .offset <= $o and $o < .offset + .length)' >/dev/null ||
        fail "the directory's block $dblk is not in the boot profile's metadata: $(ctl --json=short show boot | jq -c .metadata)"
ctl --json=short show boot | jq -e --argjson p "$(getconf PAGESIZE)" \
        '(.metadata | length > 0) and all(.metadata[]; .length > 0 and .length % $p == 0 and .offset % $p == 0)' >/dev/null ||
        fail "metadata ranges not whole pages: $(ctl --json=short show boot | jq -c .metadata)"
ctl --no-legend show boot | grep -q "^boot (boot)\|^Filesystem metadata" && fail "--no-legend shows the legend: $(ctl --no-legend show boot | head -3)"
ctl show boot | grep -q "^Filesystem metadata read (newest session, never moved): [1-9][0-9]* ranges\?, " ||
        fail "show does not tell the metadata: $(ctl show boot | head -3)"
pass "the boot profile keeps the metadata read (the directory's block $dblk), shown by seeklessctl show"
grep -q "No page-cache events" "$DAEMON_LOG" && fail "tracefs not used: $(grep "No page-cache" "$DAEMON_LOG")"
INST=$(ls -d "$TRACEFS"/instances/seekless-"$DAEMON_PID"-* 2>/dev/null | head -1)
[ -n "$INST" ] || fail "no instance of the daemon in $TRACEFS/instances"
EV=$INST/events/filemap/mm_filemap_add_to_page_cache/enable
wait_until 10 grep -qx 0 "$EV" || fail "the event stays on outside windows"
pass "instance $(basename "$INST"), event off while no window is open"

# w: its first 8 KiB cached before the window (read by a program that is not a launch), the launch reads it
# whole: the page events see only pages 2-19, so w is warm and counts as cached (whole), not as 8-80 KiB.
# The daemon tells a warm file by what of it is cached when it stores the session, after the window: a
# drop_caches meanwhile (another test's, anywhere on the machine) would make w look cold, so its first
# 8 KiB stay locked in memory from before the launch on, and the whole file from right after it.
locked() { [ "$(awk '/^VmLck:/ { print $2 }' "/proc/$1/status")" -gt 0 ]; }
lock_pages() {  # FILE:OFFSET:LENGTH, kept cached until the test ends
        "$PAGE_TOUCH" lock:"$1" sleep:600000 &
        EXTRA_PIDS+=($!)
        wait_until 10 locked $! || fail "could not lock $1 in memory"
}
"$PAGE_TOUCH" drop:"$D/big" drop:"$D/a" drop:"$D/b" drop:"$D/c" drop:"$D/w"
lock_pages "$D/w":0:8192
"$P" random:"$D/big":1000:1000 fadv:"$D/a":0:40960 fadv:"$D/b":0:40960 fadv:"$D/a":40960:40960 \
        thread:fadv:"$D/c":0:40960 write:"$D/new":65536 fadv:"$D/w":0:81920 &
prog=$!
wait "$prog" || fail "the program failed"
# the tracepoint records a launch; the BPF recorder (SEEKLESS_TEST_RECORDER=bpf) leaves it off after the boot
if [ "$(recorder)" = bpf ]; then
        grep -qx 0 "$EV" || fail "the event is on during a launch window recorded with BPF"
else
        grep -qx 1 "$EV" || fail "the event is not on during the launch window"
fi
lock_pages "$D/w":0:81920
wait_until 30 launched 1 || fail "launch with pages was not recorded"
wait_until 10 grep -qx 0 "$EV" || fail "the event stayed on after the window"

ranges() {   # the stored ranges of the launch, "PATH FIRST-LAST" each, in order
        grep -o "Page range [0-9]* of $P: .*" "$DAEMON_LOG" | sed -E 's/^Page range [0-9]+ of [^:]*: (.*) pages ([0-9]+-[0-9]+) at .*/\1 \2/'
}
big=$(ranges | grep "^$D/big " | tr '\n' ';')
[ "$big" = "$D/big 1000-1999;" ] || fail "ranges of the 100 MiB file: got [$big], want pages 1000-1999 only"
pass "MADV_RANDOM touches of pages 1000-1999: exactly that range"
ab=$(ranges | grep -E "^$D/(a|b) " | tr '\n' ';')
[ "$ab" = "$D/a 0-9;$D/b 0-9;$D/a 10-19;" ] || fail "interleaved ranges: got [$ab]"
pass "interleaved reads: three ranges in read order"
c=$(ranges | grep "^$D/c " | tr '\n' ';')
[ "$c" = "$D/c 0-9;" ] || fail "the second thread's read: got [$c]"
pass "a second thread's read counts for its process's launch"
ranges | grep -q "^$D/new " && fail "pages written into a file created during the window were kept"
profile_paths "$P" | grep -qx "$D/new" && fail "a file created during the window is in the profile"
pass "a file created and written during the window is left out"
if [ "$(recorder)" = bpf ]; then
        # BPF sees the cached pages the program used too: its range is what it read, all 20 pages
        [ "$(ranges | grep "^$D/w " | tr '\n' ';')" = "$D/w 0-19;" ] ||
                fail "the partly cached file's ranges: $(ranges | grep "^$D/w ")"
else
        ranges | grep -q "^$D/w " && fail "the partly cached file kept the ranges of what was missing: $(ranges | grep "^$D/w ")"
        grep -q "holds [0-9]* page ranges\? (.*, 1 file partly cached before: counted as cached)" "$DAEMON_LOG" ||
                fail "no word of the partly cached file"
fi
ctl --json=short show "$P" | jq -e --arg f "$D/w" '[.files[] | select(.path == $f) | .ranges] == [[{offset: 0, length: 81920}]]' >/dev/null ||
        fail "the partly cached file is not whole in the profile: $(ctl --json=short show "$P" | jq -c --arg f "$D/w" '.files[] | select(.path == $f)')"
pass "a file partly cached before the window counts whole, not as the part that was missing"
profile_paths "$P" | grep -qx "$D/big" || fail "the mapped 100 MiB file is not in the profile"
# stored and merged: the profile's hot range of the 100 MiB file is that range, in bytes
page=$(getconf PAGESIZE)
ctl --json=short show "$P" | jq -e --arg f "$D/big" --argjson o $((1000 * page)) --argjson l $((1000 * page)) \
        '[.files[] | select(.path == $f) | .ranges] == [[{offset: $o, length: $l}]]' >/dev/null ||
        fail "the profile's ranges of the 100 MiB file: $(ctl --json=short show "$P" | jq -c --arg f "$D/big" '.files[] | select(.path == $f)') $(sqlite3 "$STATE/seekless.db" "select * from session_ranges; select * from profile_ranges;" | tr "\n" " ")"
pass "the profile holds the 100 MiB file's range (seeklessctl show --json)"

# ---- 4. overflow ----
# 25600 pages overflow the tracepoint's buffer of CPU 0 (1 MiB); for the BPF ring buffer (the daemon
# says how large), 32 pages per KiB of it, each at least one record of 56 bytes
# (daemon/record-bpf/pages-event.h and the ring's header of 8): 1.75 times the ring, read one page at a
# time from a sparse file (pages of a hole: nothing read from the disk; dropped every 4096 pages)
touched=$D/big
pages=25600
if [ "$(recorder)" = bpf ]; then
        ring=$(grep -o "a ring buffer of [0-9]* KiB" "$DAEMON_LOG" | grep -o "[0-9]*" || true)
        [ -n "$ring" ] || fail "no word of the ring buffer's size"
        touched=$D/hole
        pages=$((ring * 32))
        truncate -s $((pages * page)) "$touched"
fi
"$PAGE_TOUCH" drop:"$touched"
if [ "$(recorder)" = bpf ]; then
        taskset -c 0 "$P" sleep:1000 strided:"$touched":$pages:1 &
else
        taskset -c 0 "$P" sleep:1000 random:"$touched":0:$pages &
fi
prog=$!
if [ "$(recorder)" = bpf ]; then
        lost="BPF page record(s) lost (the ring buffer was full): the sessions open now are marked incomplete"
else
        lost="page-cache event(s) lost (the buffer was full): sessions open now are marked incomplete"
        wait_until 10 grep -qx 1 "$EV" || fail "the event is not on for the second launch"
fi
# only once the exec went through: the exec thread switches the event on before it allows the exec, and a
# daemon stopped before that would hold the exec forever
exec_done() { [ "$(readlink "/proc/$prog/exe")" = "$P" ]; }
wait_until 10 exec_done || fail "the program did not start"
kill -STOP "$DAEMON_PID"
wait "$prog" || { kill -CONT "$DAEMON_PID"; fail "the program failed"; }
kill -CONT "$DAEMON_PID"
wait_until 30 launched 2 || fail "the launch with lost events was not recorded"
grep -q "$lost" "$DAEMON_LOG" || fail "no word of the lost events"
ctl --json=short sessions | jq -e --arg n "$P" '[.[] | select(.profile == $n)] | sort_by(.id) | length == 2 and .[0].complete == true and .[1].complete == false' >/dev/null ||
        fail "sessions' completeness: $(ctl --json=short sessions)"
wait_until 10 grep -q "holds [0-9]* page ranges\? ([1-9][0-9]* page events lost" "$DAEMON_LOG" ||
        fail "the session counts no lost events"
pass "lost page events mark the session open then incomplete"

# tracefs unmounted lazily under the daemon while a window has the event on: the daemon still switches it off
# and removes its instance at exit (seen through a second mount of the same tracefs). Not with BPF, which
# never switches the event on.
[ "$(recorder)" = bpf ] && { stop_daemon; exit 0; }
mkdir -p "$TMP/tracefs2"
mount -t tracefs nodev "$TMP/tracefs2"
EXTRA_MOUNTS+=("$TMP/tracefs2")
name=$(basename "$INST")
"$P" sleep:100 &
prog=$!
wait_until 10 grep -qx 1 "$TMP/tracefs2/instances/$name/events/filemap/mm_filemap_add_to_page_cache/enable" ||
        fail "the event is not on for the third launch"
umount -l "$TRACEFS"
pid=$DAEMON_PID
stop_daemon
# at once: another seeklessd starting on this machine would remove an instance left behind (its owner gone)
[ -e "$TMP/tracefs2/instances/$name" ] && fail "the instance was left behind at exit, tracefs lazily unmounted"
ls "$TMP/tracefs2/instances" | grep -q "^seekless-$pid-" && fail "instances left behind: $(ls "$TMP/tracefs2/instances")"
wait "$prog" || fail "the program failed"
pass "instance removed at exit, its tracefs lazily unmounted while the event was on"
