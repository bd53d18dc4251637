#!/bin/bash
# A hostile user's page flood: nobody launches a program of its own on the watched filesystem that reads
# FLOOD_PAGES (1,100,000) pages of a sparse file in a world-writable directory, one page each, 32 pages
# apart, backwards (each page a new range, each at the front of the file's page set: the worst order for
# it), dropping them as it goes. The daemon takes every page event (the session says how many: at least
# 2^20), keeps the file's first SESSION_MAX_FILE_RANGES (4,096) ranges, marks the session incomplete and
# says so once; meanwhile `seeklessctl status` answers each poll within 1 s (while page sets grew in
# quadratic time, 400,000 ranges held one status for 50 s), and SIGTERM ends the daemon with the session
# stored. The daemon's CPU time for the flood and its peak memory are printed (not judged here: see
# bench/README.md).
. "$(dirname "$0")/lib.sh"

: "${PAGE_TOUCH:?run through meson test}"
FLOOD_PAGES=${FLOOD_PAGES:-1100000}
setup_image
test_tracefs
[ -e "$TEST_TRACEFS/events/filemap/mm_filemap_add_to_page_cache" ] || { echo "SKIP: no page-cache tracepoint"; exit 77; }

# nobody's corner: its program and a sparse file, made before the launch (files born in a window are
# left out of its pages)
chmod 755 "$TMP"
mkdir -m 1777 "$MNT/pub"
as_nobody truncate -s $((FLOOD_PAGES * 32 * 4096 + 4096)) "$MNT/pub/big"
install -o 65534 -g 65534 -m 755 "$PAGE_TOUCH" "$MNT/pub/flood"
P=$MNT/pub/flood
# the program's own pages stay cached (locked) until the end: evicted by a drop_caches elsewhere on the
# machine, the exec would read them into the session, a range more than the flood's
"$PAGE_TOUCH" lock:"$P":0:"$(stat -c %s "$P")" sleep:3600000 &
EXTRA_PIDS+=($!)
whole_cached() { [ "$(fincore -nb -o RES "$P")" -ge "$(stat -c %s "$P")" ]; }
wait_until 30 whole_cached || fail "the program's pages not locked in the page cache"
start_recording --filesystem="$MNT" <<EOC
LaunchWindowSec=600
EOC

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
status_ms() {   # one `seeklessctl status`, its latency in ms
        local t0 t1
        t0=$(date +%s%N)
        ctl status > /dev/null || fail "status failed during the flood"
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000))
}

cpu0=$(cpu_ticks)
as_nobody "$P" strided:"$MNT/pub/big":"$FLOOD_PAGES":32 &
flood=$!
EXTRA_PIDS+=("$flood")
polls=0 worst=0
while kill -0 "$flood" 2>/dev/null; do
        ms=$(status_ms)
        polls=$((polls + 1))
        [ "$ms" -gt "$worst" ] && worst=$ms
        [ "$ms" -lt 1000 ] || fail "status took $ms ms during the flood (poll $polls)"
        sleep 0.2
done
wait "$flood" || fail "the flood program failed"
unset 'EXTRA_PIDS[-1]'
# the events still queued are worked off a slice at a time, status answering in between
settled=0 last=$(cpu_ticks) since=$SECONDS
while [ "$settled" -lt 3 ]; do
        [ $((SECONDS - since)) -lt 60 ] || fail "the daemon still busy 60 s after the flood ($(((last - cpu0) / ticks)) s of CPU)"
        ms=$(status_ms)
        polls=$((polls + 1))
        [ "$ms" -gt "$worst" ] && worst=$ms
        [ "$ms" -lt 1000 ] || fail "status took $ms ms after the flood (poll $polls)"
        sleep 0.3
        now=$(cpu_ticks)
        if [ "$now" = "$last" ]; then settled=$((settled + 1)); else settled=0; fi
        last=$now
done
[ "$polls" -ge 5 ] || fail "only $polls polls during the flood"
cpu=$((last - cpu0))
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
pass "$polls status polls during and after the flood, the slowest $worst ms"

t0=$(date +%s%N)
stop_daemon
stop_ms=$((($(date +%s%N) - t0) / 1000000))
events=$(sed -n "s|^The app session of $P took \([0-9]*\) page-cache events$|\1|p" "$DAEMON_LOG")
[ -n "$events" ] || fail "the launch was not stored: $(grep "session of $P" "$DAEMON_LOG")"
echo "  daemon: $events page events, $(awk -v t="$cpu" -v k="$ticks" 'BEGIN { printf "%.2f", t / k }') s of CPU" \
        "($(awk -v t="$cpu" -v k="$ticks" -v e="$events" 'BEGIN { printf "%.2f", t / k * 1e6 / e }') us an event)," \
        "VmHWM $((hwm / 1024)) MiB; SIGTERM to exit $stop_ms ms"
[ "$events" -ge 1048576 ] || fail "the session took $events page events, fewer than 2^20"
grep -q "^Recorded app session of $P: 2 files (incomplete)$" "$DAEMON_LOG" ||
        fail "not stored as incomplete: $(grep "session of $P" "$DAEMON_LOG")"
# (events still queued when the window closed, more than a quarter of a second of work, count as lost: a
# busy machine loses some, seeklessd(8) "Pages"; the ranges kept are the cap's all the same)
# the file's 4096, and the program's own where its recorder sees the cached pages it uses (BPF)
big=$(grep -c "^Page range [0-9]* of $P: $MNT/pub/big pages " "$DAEMON_LOG" || true)
own=$(grep -c "^Page range [0-9]* of $P: $P pages " "$DAEMON_LOG" || true)
[ "$big" = 4096 ] || fail "not the file's 4096 ranges: $big"
grep -q "^The app session of $P holds $((4096 + own)) page ranges ([0-9]* page events lost," "$DAEMON_LOG" ||
        fail "not the file's 4096 ranges and the program's $own: $(grep "session of $P holds" "$DAEMON_LOG")"
[ "$(grep -c "^The app session of $P reached its limit of page ranges (16384, 4096 of one file): [0-9]* pages of later ranges left out, stored as incomplete$" \
        "$DAEMON_LOG")" = 1 ] || fail "the cap not logged once: $(grep "reached its limit" "$DAEMON_LOG")"
pass "$events page events: 4096 ranges kept, the session stored incomplete, the cap logged once"
