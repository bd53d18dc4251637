#!/bin/bash
# A launch prefetched at its exec ([Prefetch] PrefetchLaunches=, with [Record] Recorder=bpf), against a
# real daemon on a loop-mounted ext4 marked rotational. A program that reads eight files of 256 KiB after
# its start-up (its "CPU work": here it waits on a FIFO, which the test opens once the daemon has logged
# the prefetch's end, so that nothing depends on how fast the machine is) is recorded cold; its files and
# its own pages leave the page cache; it runs again. Checked from a tracefs instance of the test's own,
# independently of the daemon: the page-cache insertions on the image, by task, and the reads submitted
# to the loop device:
# - >= 90% of the files' pages the program read were inserted by seeklessd's threads (the prefetch), not
#   by the program;
# - seeklessd's reads on the device go in ascending position (in the order it submitted them);
# - the hit ratio the daemon logs for that launch is within 5 points of the one counted here;
# - with PrefetchLaunches=no (a daemon started again), the same run has the program insert its pages itself.
# Skips (77) where the daemon was built without the BPF recorder.
. "$(dirname "$0")/lib.sh"
# counts what the prefetch cached: no drop of every cache by a test beside meanwhile (tests/lib-core.sh)
caches_kept

setup_image
mkdir -p "$MNT/bin" "$MNT/d"
P=$MNT/bin/slow-start
cp "$PAGE_TOUCH" "$P"
files=()
for f in a b c d e f g h; do head -c $((64 * 4096)) /dev/urandom > "$MNT/d/$f"; files+=("$MNT/d/$f"); done
sync
mkfifo "$TMP/go"
steps=("read:$TMP/go")
for f in "${files[@]}"; do steps+=("read:$f"); done

# a window long enough for the wait on the prefetch, on a slow machine
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=20
Recorder=bpf
MaxLaunchesPerBoot=20
[Prefetch]
PrefetchMinAvailableMiB=0
PrefetchMaxMemoryPressure=100
EOC
if grep -q "No BPF page recorder (not built in" "$DAEMON_LOG"; then
        echo "SKIP: seeklessd was built without the BPF recorder (-Dbpf_recorder)"
        exit 77
fi
grep -q "Recording pages with BPF (the boot's and the launches')" "$DAEMON_LOG" || fail "the BPF recorder did not start"

sessions() { ctl --json=short profiles | jq --arg n "$P" '[.[] | select(.name == $n) | .sessions][0] // 0'; }
cold_run() {
        local n
        n=$(sessions)
        "$PAGE_TOUCH" $(printf 'drop:%s ' "${files[@]}") "drop:$P"
        "$P" "${steps[@]}" &
        echo go > "$TMP/go"
        wait $! || fail "the program failed"
        wait_until 60 eval '[ "$(sessions)" -gt '"$n"' ]' || fail "launch not recorded"
}
cold_run
pass "the cold launch recorded: $(ctl --json=short show "$P" | jq '.files | length') files"

# the test's own tracefs instance: insertions on the image, reads submitted to its device
KDEV=$(( $(stat -c '%t' "$LOOP" | sed 's/^/0x/') << 20 | $(stat -c '%T' "$LOOP" | sed 's/^/0x/') ))
INST=$TEST_TRACEFS/instances/seekless-test-$$
test_cleanup() { [ -d "$INST" ] && { echo 0 > "$INST/tracing_on"; rmdir "$INST"; }; }
mkdir "$INST" || fail "cannot create a tracefs instance"
echo 8192 > "$INST/buffer_size_kb"
echo "s_dev == $KDEV" > "$INST/events/filemap/mm_filemap_add_to_page_cache/filter"
echo "dev == $KDEV" > "$INST/events/block/block_bio_queue/filter"
echo 1 > "$INST/events/filemap/mm_filemap_add_to_page_cache/enable"
echo 1 > "$INST/events/block/block_bio_queue/enable"

traced_run() {  # [prefetched] -> $TMP/trace.txt
        local n pid done0
        n=$(sessions)
        done0=$(grep -c "Prefetch of $P on $MNT: " "$DAEMON_LOG" || true)
        "$PAGE_TOUCH" $(printf 'drop:%s ' "${files[@]}") "drop:$P"
        echo > "$INST/trace"
        echo 1 > "$INST/tracing_on"
        "$P" "${steps[@]}" &
        pid=$!
        if [ "${1:-}" = prefetched ]; then
                wait_until 60 eval '[ "$(grep -c "Prefetch of $P on $MNT: " "$DAEMON_LOG")" -gt '"$done0"' ]' ||
                        fail "no prefetch at the exec"
        fi
        echo go > "$TMP/go"
        wait "$pid" || fail "the program failed"
        wait_until 60 eval '[ "$(sessions)" -gt '"$n"' ]' || fail "launch not recorded"
        echo 0 > "$INST/tracing_on"
        cat "$INST/trace" > "$TMP/trace.txt"
}
# tid -> who: "daemon" for seeklessd's threads (listed while it runs), else "other"
daemon_tids() { ls "/proc/$DAEMON_PID/task"; }
# the files' pages inserted by seeklessd's threads and by anyone else: "DAEMON OTHER"
count_inserts() {
        local inos
        inos=$(stat -c '%i' "${files[@]}" | xargs printf '%x\n')
        awk -v tids="$(daemon_tids | tr '\n' ' ')" -v inos="$(echo $inos)" '
                BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) d[t[i]] = 1
                        n = split(inos, x, " "); for (i = 1; i <= n; i++) f[x[i]] = 1 }
                / mm_filemap_add_to_page_cache: / {
                        match($0, /-[0-9]+ +\[/); tid = substr($0, RSTART + 1, RLENGTH - 1); sub(/ +\[/, "", tid)
                        match($0, / ino [0-9a-f]+ /); ino = substr($0, RSTART + 5, RLENGTH - 6)
                        match($0, / order=[0-9]+/); order = substr($0, RSTART + 7, RLENGTH - 7)
                        if (!(ino in f)) next
                        if (tid in d) dm += 2 ^ order; else ot += 2 ^ order }
                END { print dm + 0, ot + 0 }' "$TMP/trace.txt"
}
# the sectors of seeklessd's reads, in the order it submitted them (block_bio_queue runs in the submitter's
# context; a request may be issued from a kernel worker): ascending?
daemon_ascending() {
        awk -v tids="$(daemon_tids | tr '\n' ' ')" '
                BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) d[t[i]] = 1 }
                / block_bio_queue: / {
                        match($0, /-[0-9]+ +\[/); tid = substr($0, RSTART + 1, RLENGTH - 1); sub(/ +\[/, "", tid)
                        if (!(tid in d)) next
                        match($0, / [0-9]+ \+ [0-9]+ /); s = substr($0, RSTART + 1) + 0
                        n++; if (n > 1 && s < last) down++; last = s }
                END { print n + 0, down + 0 }' "$TMP/trace.txt"
}

traced_run prefetched
read -r dm ot < <(count_inserts)
total=$((8 * 64))
echo "  prefetched launch: the files' $total pages, $dm inserted by seeklessd, $ot by the program"
[ $((dm + ot)) -ge "$total" ] || fail "only $((dm + ot)) of the files' $total pages inserted at all"
[ $((dm * 100)) -ge $((total * 90)) ] || fail "the prefetch brought in $dm of $total pages (< 90%)"
read -r nreq down < <(daemon_ascending)
[ "$nreq" -gt 0 ] && [ "$down" = 0 ] || fail "seeklessd's $nreq requests went down $down times"
pass "prefetched at its exec: $dm of the $total pages the program read came from seeklessd's prefetch, in $nreq reads submitted in ascending position"

line=$(grep "Launch of $P, prefetched: " "$DAEMON_LOG" | tail -n 1)
[ -n "$line" ] || fail "no hit ratio logged"
hit=$(sed -n 's/.*hit ratio \([0-9]*\)%.*/\1/p' <<< "$line")
# the pages the program used: its files and its own binary, whole (it is small, and fault-around maps it)
bin_pages=$(( ($(stat -c %s "$P") + 4095) / 4096 ))
read -r bdm bot < <(awk -v ino="$(printf '%x' "$(stat -c %i "$P")")" -v tids="$(daemon_tids | tr '\n' ' ')" '
        BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) d[t[i]] = 1 }
        / mm_filemap_add_to_page_cache: / && $0 ~ (" ino " ino " ") {
                match($0, /-[0-9]+ +\[/); tid = substr($0, RSTART + 1, RLENGTH - 1); sub(/ +\[/, "", tid)
                match($0, / order=[0-9]+/); order = substr($0, RSTART + 7, RLENGTH - 7)
                if (tid in d) dm += 2 ^ order; else ot += 2 ^ order }
        END { print dm + 0, ot + 0 }' "$TMP/trace.txt")
own=$(( 100 - (ot + bot) * 100 / (total + bin_pages) ))
echo "  daemon: $line"
echo "  counted here: $((ot + bot)) of $((total + bin_pages)) pages used read by the program itself: $own%"
[ $(( hit - own )) -le 5 ] && [ $(( own - hit )) -le 5 ] || fail "the daemon's hit ratio $hit% is not within 5 points of $own%"
pass "the daemon's hit ratio ($hit%) agrees with the trace's ($own%)"

# off: the program reads its pages itself (a daemon started again: the one before would not ask for the
# same program again within a minute anyway)
stop_daemon
sed -i 's/^\[Prefetch\]$/[Prefetch]\nPrefetchLaunches=no/' "$CONF"
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
traced_run
read -r dm ot < <(count_inserts)
[ "$dm" = 0 ] && [ "$ot" -ge "$total" ] || fail "with PrefetchLaunches=no: $dm pages by seeklessd, $ot by the program"
pass "PrefetchLaunches=no: the program inserted its $ot pages itself, seeklessd none"
