#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Recorder benchmark for seeklessd. See bench/README.md.
#
#   sudo bench/record.sh [BUILD_DIR]        (default: build/)
#
# Measures, on a scratch loop-mounted ext4 image and a private dbus-daemon:
#   a. throughput of open+read+close and of open+mmap+close+touch+munmap ("read" and "mmap" modes), the
#      three configurations (no daemon / daemon idle / daemon in a window) of both modes interleaved round
#      by round, medians:
#      a1. repeated reads, hot cache: 50k small files, each read many times per window (after a warm-up);
#      a2. first reads, cold: ONE pass over 20k files whose pages were dropped just before
#          (POSIX_FADV_DONTNEED per file) and none of which was read before in that window (a fresh window
#          daemon per measurement): each file's first read, and one page-cache event per file;
#   b. daemon RSS while recording, and after storing, a boot of 100k distinct files read cold (each file
#      also gets a page range);
#   c. database growth per recorded boot of 5k files read cold (first boot and later boots);
#   h. the kernel's cost of the one mark an idle daemon holds (FAN_OPEN_EXEC_PERM on the filesystem),
#      without any daemon: the hot read loop of (a1) in alternating slices with and without the mark, in
#      one process (openbench --hook): the floor under (a1)'s idle figure.
# Prints PASS/FAIL against the targets; exits 0 whatever the verdicts, non-zero only if something broke
# (setup failed, a daemon did not start or did not exit cleanly). Needs root (fanotify, loop devices).
#
# Knobs (environment): ROUNDS=9 SECS=2 NFILES=50000 NFIRST=20000 NRSS=100000 NBOOT=5000 BOOTS=3
# DAEMON_ARGS="" (more seeklessd options, e.g. --tracefs=/nonexistent: no page-cache events)
# RECORDER=fanotify (the daemons' Recorder=; the figures in bench/README.md are the tracepoint recorder's)
# HOOK_CYCLES=200 HOOK_SLICE=0.25 (part h)
# PARTS="a1 a2 b c h" (the parts to run, e.g. PARTS=b: only the memory measurement; files of the others are
# not created)

set -euo pipefail

ROUNDS=${ROUNDS:-9}
SECS=${SECS:-2}
NFILES=${NFILES:-50000}
NFIRST=${NFIRST:-20000}
NRSS=${NRSS:-100000}
NBOOT=${NBOOT:-5000}
BOOTS=${BOOTS:-3}
DAEMON_ARGS=${DAEMON_ARGS:-}
RECORDER=${RECORDER:-fanotify}
HOOK_CYCLES=${HOOK_CYCLES:-200}
HOOK_SLICE=${HOOK_SLICE:-0.25}
PARTS=${PARTS:-a1 a2 b c h}
FIRST_DIRS=3            # disjoint directories of NFIRST files for (a2), one per configuration per round
RSS_CHUNK=10000          # files read per burst in (b): below the 16384-event fanotify queue

for p in $PARTS; do
        case $p in a1|a2|b|c|h) ;; *) echo "ERROR: PARTS: unknown part '$p' (a1, a2, b, c, h)" >&2; exit 1 ;; esac
done
[ -n "${PARTS// /}" ] || { echo "ERROR: PARTS is empty (a1, a2, b, c, h)" >&2; exit 1; }
part() { [[ " $PARTS " == *" $1 "* ]]; }

. "$(dirname "$0")/lib.sh"
bench_init record cc mkfs.ext4 losetup dbus-daemon busctl jq sqlite3 -- "$@"
MNT=

boot_profile() {    # FIELD of the "boot" profile (files, sessions), empty if none
        "$SEEKLESSCTL" --json=short profiles | jq -r --arg f "$1" '.[] | select(.name == "boot") | .[$f]'
}
boot_profile_at_least() { local v; v=$(boot_profile "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

status_kib() {      # PID FIELD (VmRSS, VmHWM) -> KiB
        awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}
kib_mib() { mib $(( $1 * 1024 )); }

# seeklessd NAME on the image, with DAEMON_ARGS
record_daemon() {   # NAME CONF STATE_DIR BOOT_ID
        # shellcheck disable=SC2086
        start_daemon "$1" "$2" "$3" --boot-id="$4" --filesystem="$MNT" $DAEMON_ARGS
}

file_size() { local f=$1 s=0; [ -e "$f" ] && s=$(stat -c %s "$f"); echo "$s"; }

# ---------------------------------------------------------------------------------------------- setup
log "seekless recorder benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)"
log "build: $BUILD; scratch: $TMP${DAEMON_ARGS:+; seeklessd options: $DAEMON_ARGS}; parts: $PARTS"
others=$(pgrep -x seeklessd || true)
[ -z "$others" ] || log "NOTE: other seeklessd processes are running (pids: $(echo $others)); they are not ours" \
        "and watch other filesystems, but they do add noise to the 'none' baseline"

bench_binaries daemon/seeklessd cli/seeklessctl
log "$(bench_source);" \
        "seeklessd $("$SEEKLESSD" --version 2>&1 | head -n 1), binary sha256 $(sha256sum "$SEEKLESSD" | cut -c1-12)"
bench_cc openbench bench/openbench.c
OB=$TMP/openbench    # lives on /tmp, not on the watched image: running it starts no launch session

IMG=$TMP/fs.img
MNT=$TMP/mnt
make_ext4_image "$IMG" 1536M -N 300000
attach "$IMG"; LOOP=$ATTACHED
do_mount "$LOOP" "$MNT"
log "image: $IMG on $LOOP mounted at $MNT (ext4, 4 KiB blocks)"

part a1 || part h || NFILES=0
part a2 || NFIRST=0
part c || NBOOT=0
part b || NRSS=0
mkdir -p "$MNT/tput" "$MNT/boot5k"
"$OB" --create "$MNT/tput" "$NFILES" 1024 4096
for ((d = 0; d < FIRST_DIRS; d++)); do
        mkdir -p "$MNT/first/$d"
        "$OB" --create "$MNT/first/$d" "$NFIRST" 1024 4096
done
"$OB" --create "$MNT/boot5k" "$NBOOT" 1024 4096
nchunks=$(( (NRSS + RSS_CHUNK - 1) / RSS_CHUNK ))
for ((c = 0; c < nchunks; c++)); do
        n=$(( NRSS - c * RSS_CHUNK < RSS_CHUNK ? NRSS - c * RSS_CHUNK : RSS_CHUNK ))
        mkdir -p "$MNT/rss/$c"
        "$OB" --create "$MNT/rss/$c" "$n" 1 512
done
# read everything once (first-read atime updates) and write it all back, so no writeback runs later
[ "$NFILES" = 0 ] || "$OB" "$MNT/tput" "$NFILES" 0 >/dev/null
[ "$NFIRST" = 0 ] || for ((d = 0; d < FIRST_DIRS; d++)); do "$OB" --once "$MNT/first/$d" "$NFIRST" >/dev/null; done
[ "$NBOOT" = 0 ] || "$OB" "$MNT/boot5k" "$NBOOT" 0 >/dev/null
for ((c = 0; c < nchunks; c++)); do "$OB" "$MNT/rss/$c" $(ls "$MNT/rss/$c" | wc -l) 0 >/dev/null; done
sync
log "files: $NFILES in tput/ (1-4 KiB), $FIRST_DIRS x $NFIRST in first/*/ (1-4 KiB), $NBOOT in boot5k/ (1-4 KiB), $NRSS in rss/*/ (1-512 B)"

start_bus

printf '[Record]\nRecorder=%s\nBootWindowSec=1\n' "$RECORDER" > "$TMP/idle.conf"
printf '[Record]\nRecorder=%s\nBootWindowSec=600\n' "$RECORDER" > "$TMP/window.conf"
IDLE_BOOT=$(random_boot_id)

# -------------------------------------------------- (h) the exec permission mark alone
if part h; then
        log "(h) the exec permission mark alone: $HOOK_CYCLES cycles of 2 x ${HOOK_SLICE}s over tput/, no daemon"
        HOOK=$("$OB" --hook "$MNT" "$MNT/tput" "$NFILES" "$HOOK_CYCLES" "$HOOK_SLICE") || die "openbench --hook failed"
        log "  $HOOK"
        result measure h line "$HOOK" median "$(sed -E 's/^marked\/unmarked median ([0-9.]+) .*/\1/' <<<"$HOOK")"
fi

# -------------------------------------------------- (a1) throughput, repeated reads, interleaved
# Hot files, each read many times per window: openbench's warm-up pass reads every file once, so in a
# window the daemon has every file in its session before the timed loop starts. The daemon places its
# ignore mark when a read of a file that is already in the session reaches it, i.e. on the second read:
# the timed loop's first pass over the files still produces one event per file, after that the files
# are silenced, so the timed loop measures almost only repeat reads that cost no event.
MEAS=(read:none read:idle read:window mmap:none mmap:idle mmap:window)   # rotated per round
NOPAGES=0

# the daemon of a configuration: none; idle (its boot window over, the same boot ID each time); window (a
# new boot, its window open; NAME: its log and state directory)
start_config() {    # CONFIG NAME WHAT
        case $1 in
        none)
                [ -z "$DAEMON_PID" ] || die "internal: a daemon is running during the no-daemon run"
                ;;
        idle)
                record_daemon idle "$TMP/idle.conf" "$TMP/state-idle" "$IDLE_BOOT"
                wait_until 30 boot_over || die "idle daemon: boot window did not close"
                ;;
        window)
                record_daemon "$2" "$TMP/window.conf" "$TMP/state-$2" "$(random_boot_id)"
                boot_recording || die "$3 daemon: boot window not open"
                ;;
        esac
}

ob_mode() { [ "$1" = mmap ] && echo --mmap || true; }

log_mark() { local f=$TMP/$1.log; [ -e "$f" ] && wc -l < "$f" || echo 0; }
# the page-event figures a daemon logged since line MARK of its log: "LOST RANGES FILES" (events lost per
# the reader's warnings; page ranges and files of the stored boot session, - if none stored)
page_figures() {    # NAME MARK
        local f=$TMP/$1.log lost ranges files meta
        lost=$(tail -n +"$(( $2 + 1 ))" "$f" | awk 'match($0, /[0-9]+ page-cache event\(s\) lost/) {
                split(substr($0, RSTART, RLENGTH), w, " "); s += w[1] } END { print s + 0 }')
        ranges=$(tail -n +"$(( $2 + 1 ))" "$f" | awk 'match($0, /boot session of boot holds [0-9]+ page range/) {
                split(substr($0, RSTART, RLENGTH), w, " "); n = w[6] } END { print n }')
        meta=$(tail -n +"$(( $2 + 1 ))" "$f" | awk 'match($0, /lost, [0-9]+ ranges? of filesystem metadata/) {
                split(substr($0, RSTART, RLENGTH), w, " "); n = w[2] } END { print n }')
        files=$(tail -n +"$(( $2 + 1 ))" "$f" | awk 'match($0, /Recorded boot session of boot: [0-9]+ file/) {
                split(substr($0, RSTART, RLENGTH), w, " "); n = w[6] } END { print n }')
        if tail -n +"$(( $2 + 1 ))" "$f" | grep -q 'No page-cache events'; then
                NOPAGES=1
                echo "ANOMALY: seeklessd ($1) records no page-cache events:"                         "$(tail -n +"$(( $2 + 1 ))" "$f" | grep 'No page-cache events' | head -n 1)" >&2
        fi
        echo "$lost ${ranges:--} ${files:--} ${meta:--}"
}

measure() {         # MODE:CONFIG ROUND
        local m=${1%%:*} c=${1#*:} r=$2 out ops mark res fig=()
        mark=$(log_mark "$c")
        # hot: read them all once more with no daemon of ours running (other sessions on a shared machine
        # drop caches). Not kept mapped by a process instead: a window daemon adds the files that running
        # processes map to its boot session at start (and resolves them meanwhile)
        "$OB" "$MNT/tput" "$NFILES" 0 >/dev/null || die "openbench failed (re-warm)"
        res=$("$OB" --resident "$MNT/tput" "$NFILES") || die "openbench --resident failed"
        res=${res#*files, }; res=${res%% *}
        start_config "$c" window window
        sleep 0.5
        out=$("$OB" $(ob_mode "$m") "$MNT/tput" "$NFILES" "$SECS") || die "openbench failed ($m $c)"
        ops=${out%% *}
        case $c in
        idle)
                boot_over || die "idle daemon: a window opened during the measurement"
                fig=(rss_kib "$(status_kib "$DAEMON_PID" VmRSS)" events "$(prop EventsReceived)"
                     cpu_ticks "$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat")")
                stop_daemon || true
                ;;
        window)
                boot_recording || die "window daemon: window closed during the measurement"
                fig=(events "$(prop EventsReceived)" overflows "$(prop Overflows)"
                     rss_kib "$(status_kib "$DAEMON_PID" VmRSS)" cpu_ticks "$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat")")
                stop_daemon || true
                read -r pl pr pf _ <<< "$(page_figures window "$mark")"
                fig+=(pages_lost "$pl" ranges "$pr" files "$pf")
                ;;
        esac
        result measure a1 mode "$m" variant "$c" round "$r" ops_s "$ops" resident "$res" "${fig[@]}"
        log "  round $r  $(printf '%-5s %-6s' "$m" "$c") $(printf '%8s' "$ops") ops/s"
}

if part a1; then
        log "(a1) repeated reads, hot: $ROUNDS rounds x {read, mmap} x {none, idle, window}, ${SECS}s each, $NFILES files," \
                "order rotated per round"
        for ((r = 1; r <= ROUNDS; r++)); do
                for ((k = 0; k < ${#MEAS[@]}; k++)); do
                        measure "${MEAS[(k + r - 1) % ${#MEAS[@]}]}" "$r"
                done
        done
fi

# ------------------------------------------------------ (a2) throughput, first reads, interleaved
# ONE timed pass (openbench --once) over NFIRST files that the observer has not seen: every read in it
# is the first read of its file in the window, which the kernel reports (an ignore mark is only placed
# after the event reached the daemon). Each window measurement starts a fresh daemon (new boot ID), and
# its ignore marks die with its fanotify group, so no file was read before in that window. The
# FIRST_DIRS directories are disjoint and rotate over the configurations round by round; all are re-read
# with no daemon running at the start of each round, so each pass finds the same hot page, dentry and
# inode caches and no atime to update.
measure_first() {   # MODE:CONFIG ROUND DIR_INDEX
        local m=${1%%:*} c=${1#*:} r=$2 d=$3 out ops mark res name fig=()
        name=$c; [ "$c" = window ] && name=first
        mark=$(log_mark "$name")
        # cold: the pass's files' pages dropped, before a daemon starts (opening them raises no event then)
        res=$("$OB" --drop "$MNT/first/$d" "$NFIRST") || die "openbench --drop failed"
        res=${res#*files, }; res=${res%% *}
        start_config "$c" first first-reads
        sleep 0.5
        out=$("$OB" $(ob_mode "$m") --once "$MNT/first/$d" "$NFIRST") || die "openbench --once failed ($m $c)"
        ops=${out%% *}
        case $c in
        idle)
                boot_over || die "idle daemon: a window opened during the measurement"
                fig=(events "$(prop EventsReceived)")
                stop_daemon || true
                ;;
        window)
                sleep 0.3   # let the daemon drain its queue before reading its counters
                boot_recording || die "first-reads daemon: window closed during the measurement"
                fig=(events "$(prop EventsReceived)" overflows "$(prop Overflows)"
                     cpu_ticks "$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat")")
                stop_daemon || true
                read -r pl pr pf _ <<< "$(page_figures first "$mark")"
                fig+=(pages_lost "$pl" ranges "$pr" files "$pf")
                ;;
        esac
        result measure a2 mode "$m" variant "$c" round "$r" dir "$d" ops_s "$ops" resident "$res" "${fig[@]}"
        log "  round $r  $(printf '%-5s %-6s' "$m" "$c") $(printf '%8s' "$ops") ops/s  (first/$d, ${out#* ops/s })"
}

if part a2; then
        log "(a2) first reads, cold: $ROUNDS rounds x {read, mmap} x {none, idle, window}, one pass over $NFIRST files each," \
                "order rotated per round"
        for ((r = 1; r <= ROUNDS; r++)); do
                for ((d = 0; d < FIRST_DIRS; d++)); do "$OB" --once "$MNT/first/$d" "$NFIRST" >/dev/null; done
                for ((k = 0; k < ${#MEAS[@]}; k++)); do
                        ci=$(( (k + r - 1) % ${#MEAS[@]} ))
                        measure_first "${MEAS[ci]}" "$r" $(( (ci + r - 1) % FIRST_DIRS ))
                done
        done
        jq -r 'select(.measure == "a2" and .variant == "window" and .overflows != 0) |
                "ANOMALY: first-reads (\(.mode)): the fanotify queue overflowed (\(.overflows)); events were lost, which makes that pass cheaper than a real one"' "$RESULTS" >&2
        jq -r 'select((.measure == "a2" or .measure == "a1") and .variant == "window" and .pages_lost != 0) |
                "ANOMALY: (\(.mode)) a window daemon lost \(.pages_lost) page-cache event(s)"' "$RESULTS" >&2
        jq -r 'select(.measure == "a2" and .resident != 0) |
                "ANOMALY: (\(.mode)) \(.resident) page(s) still resident after the drop before a cold pass"' "$RESULTS" >&2
fi

# ------------------------------------------------------------------------------------ (b) RSS, 100k
if part b; then
        log "(b) RSS: one boot window, $NRSS distinct files read in bursts of $RSS_CHUNK"
        RSS_WINDOW=45          # long enough for the reads on a busy machine
        # MaxSessionFiles= (default 65536) raised so that the session takes all the files
        printf '[Record]\nRecorder=%s\nBootWindowSec=%s\nMaxSessionFiles=%s\n' "$RECORDER" "$RSS_WINDOW" "$((NRSS * 2))" > "$TMP/rss.conf"
        # cold: every file's page dropped first, so each read also makes a page-cache event (and a page range)
        RSS_RESIDENT=0
        for ((c = 0; c < nchunks; c++)); do
                res=$("$OB" --drop "$MNT/rss/$c" "$(ls "$MNT/rss/$c" | wc -l)") || die "openbench --drop failed (rss)"
                res=${res#*files, }; RSS_RESIDENT=$(( RSS_RESIDENT + ${res%% *} ))
        done
        [ "$RSS_RESIDENT" = 0 ] || echo "ANOMALY: $RSS_RESIDENT page(s) of the rss files still resident after the drop" >&2
        RSS_MARK=$(log_mark rss)
        record_daemon rss "$TMP/rss.conf" "$TMP/state-rss" "$(random_boot_id)"
        RSS_START=$(status_kib "$DAEMON_PID" VmRSS)
        boot_recording || die "rss daemon: boot window not open"
        # sample VmRSS every 50 ms for the whole window and the storing after it: "seconds-since-start KiB"
        ( t0=$EPOCHREALTIME; while [ -r "/proc/$DAEMON_PID/status" ]; do
                echo "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') $(status_kib "$DAEMON_PID" VmRSS)"
                sleep 0.05
          done ) > "$TMP/rss-trace" 2>/dev/null &
        SAMPLER_PID=$!
        BENCH_PIDS+=("$SAMPLER_PID")
        RSS_T0=$EPOCHREALTIME
        for ((c = 0; c < nchunks; c++)); do
                "$OB" "$MNT/rss/$c" "$(ls "$MNT/rss/$c" | wc -l)" 0 >/dev/null || die "openbench failed (rss)"
                sleep 0.3
        done
        sleep 1
        RSS_IN_OPEN=1; boot_recording || { RSS_IN_OPEN=0; echo "ANOMALY: the window closed before the reads were done;" \
                "raise RSS_WINDOW" >&2; }
        RSS_DURING=$(status_kib "$DAEMON_PID" VmRSS); HWM_DURING=$(status_kib "$DAEMON_PID" VmHWM)
        # where it is: the daemon's mappings holding the most resident memory ("RSS/SIZE KiB NAME")
        RSS_MAPS=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { name = NF >= 6 ? $6 : "anon@" substr($1, 1, index($1, "-") - 1) }
                /^Size:/ { size[name] += $2 } /^Rss:/ { rss[name] += $2 }
                END { for (n in rss) printf "%d/%d KiB %s\n", rss[n], size[n], n }' "/proc/$DAEMON_PID/smaps" |
                sort -rn | head -n 6 | paste -sd ';' | sed 's/;/; /g')
        RSS_EVENTS=$(prop EventsReceived); RSS_OVERFLOWS=$(prop Overflows)
        log "  window open: VmRSS $(kib_mib "$RSS_DURING") MiB, VmHWM $(kib_mib "$HWM_DURING") MiB (at start: $(kib_mib "$RSS_START") MiB)," \
                "events $RSS_EVENTS, overflows $RSS_OVERFLOWS"
        wait_until $((RSS_WINDOW + 30)) boot_over || die "rss daemon: boot window did not close"
        RSS_T_CLOSED=$(awk -v a="$RSS_T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
        t0=$SECONDS
        wait_until 120 boot_profile_at_least files 1 || die "rss daemon: boot profile not stored"
        RSS_FLUSH_WAIT=$((SECONDS - t0))
        RSS_FILES=$(boot_profile files)
        sleep 1
        RSS_AFTER=$(status_kib "$DAEMON_PID" VmRSS); HWM_AFTER=$(status_kib "$DAEMON_PID" VmHWM)
        RSS_DBSIZE=$(prop DatabaseSize)
        RSS_COMPLETE=$("$SEEKLESSCTL" --json=short sessions | jq -r '[.[] | select(.profile == "boot")] | last | .complete')
        log "  stored: boot profile has $RSS_FILES files; VmRSS $(kib_mib "$RSS_AFTER") MiB, VmHWM $(kib_mib "$HWM_AFTER") MiB," \
                "DatabaseSize $RSS_DBSIZE B"
        stop_daemon || true
        read -r RSS_PLOST RSS_RANGES _ RSS_META <<< "$(page_figures rss "$RSS_MARK")"
        [ "$RSS_PLOST" = 0 ] || echo "ANOMALY: the rss daemon lost $RSS_PLOST page-cache event(s)" >&2
        wait "$SAMPLER_PID" 2>/dev/null || true
        # highest sampled VmRSS and when, relative to daemon start; the window closed at RSS_WINDOW s
        RSS_PEAK_SAMPLE=$(sort -k2,2n "$TMP/rss-trace" | awk 'NF == 2 { l = $0 } END { print l }')
        [ "$RSS_FILES" = "$NRSS" ] || echo "ANOMALY: boot profile holds $RSS_FILES files, expected $NRSS" >&2
        result measure b files "$NRSS" window_secs "$RSS_WINDOW" start_kib "$RSS_START" during_kib "$RSS_DURING" \
                hwm_during_kib "$HWM_DURING" events "$RSS_EVENTS" overflows "$RSS_OVERFLOWS" maps "$RSS_MAPS" \
                after_kib "$RSS_AFTER" hwm_after_kib "$HWM_AFTER" profile_files "$RSS_FILES" stored_after_secs "$RSS_FLUSH_WAIT" \
                db_bytes "$RSS_DBSIZE" pages_lost "$RSS_PLOST" ranges "$RSS_RANGES" meta_ranges "$RSS_META" \
                resident "$RSS_RESIDENT" complete "$RSS_COMPLETE" peak_secs "${RSS_PEAK_SAMPLE%% *}" \
                peak_kib "${RSS_PEAK_SAMPLE#* }" closed_secs "$RSS_T_CLOSED"
fi

# -------------------------------------------------------------------------------- (c) DB growth
if part c; then
        log "(c) database growth: $BOOTS boots, each reading the same $NBOOT files, cold"
        printf '[Record]\nBootWindowSec=4\n' > "$TMP/growth.conf"
        GSTATE=$TMP/state-growth
        DB=$GSTATE/seekless.db
        for ((b = 1; b <= BOOTS; b++)); do
                "$OB" --drop "$MNT/boot5k" "$NBOOT" >/dev/null || die "openbench --drop failed (growth)"
                record_daemon growth "$TMP/growth.conf" "$GSTATE" "$(random_boot_id)"
                boot_recording || die "growth daemon: boot window not open"
                "$OB" "$MNT/boot5k" "$NBOOT" 0 >/dev/null || die "openbench failed (growth)"
                boot_recording || echo "ANOMALY: growth boot $b: the window closed before the reads were done" >&2
                wait_until 30 boot_over || die "growth daemon: boot window did not close"
                wait_until 60 boot_profile_at_least sessions "$b" || die "growth daemon: boot $b not stored"
                files=$(boot_profile files) dbprop=$(prop DatabaseSize)
                stop_daemon || true
                sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
                size=$(( $(file_size "$DB") + $(file_size "$DB-wal") ))
                pages="$(sqlite3 "$DB" 'PRAGMA page_size;' | tr -d '\n')x$(sqlite3 "$DB" 'PRAGMA page_count;' | tr -d '\n'), free $(sqlite3 "$DB" 'PRAGMA freelist_count;')"
                result measure c boot "$b" bytes "$size" pages "$pages" files "$files" db_property "$dbprop"
                log "  boot $b: profile files $files, DB $size B (pages $pages), DatabaseSize property before stop $dbprop B"
        done
        result measure c-tables tables "$(sqlite3 "$DB" "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC;" 2>/dev/null ||
                echo "(dbstat unavailable)")"
fi

# ------------------------------------------------------------------------------------------ summary
result measure run date "$(date -u '+%Y-%m-%d %H:%M UTC')" kernel "$(uname -r)" cpus "$(nproc)" nfiles "$NFILES" \
        secs "$SECS" rounds "$ROUNDS" nfirst "$NFIRST" nrss "$NRSS" nboot "$NBOOT" boots "$BOOTS" \
        hook_cycles "$HOOK_CYCLES" hook_slice "$HOOK_SLICE" clk_tck "$(getconf CLK_TCK)" parts "$PARTS"
bench_finish
