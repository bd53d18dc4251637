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
HOOK_CYCLES=${HOOK_CYCLES:-200}
HOOK_SLICE=${HOOK_SLICE:-0.25}
PARTS=${PARTS:-a1 a2 b c h}
FIRST_DIRS=3            # disjoint directories of NFIRST files for (a2), one per configuration per round
RSS_CHUNK=10000          # files read per burst in (b): below the 16384-event fanotify queue

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
[ -d "$BUILD" ] || BUILD=$SRC/$BUILD
BUILD=$(cd "$BUILD" && pwd)
SEEKLESSD=$BUILD/daemon/seeklessd
SEEKLESSCTL=$BUILD/cli/seeklessctl

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: bench/record.sh needs root (fanotify, loop devices): sudo $0 ${1:-build}"
        exit 77
fi
for x in "$SEEKLESSD" "$SEEKLESSCTL"; do
        [ -x "$x" ] || { echo "ERROR: $x not found; build first (ninja -C build)" >&2; exit 1; }
done
for p in $PARTS; do
        case $p in a1|a2|b|c|h) ;; *) echo "ERROR: PARTS: unknown part '$p' (a1, a2, b, c, h)" >&2; exit 1 ;; esac
done
[ -n "${PARTS// /}" ] || { echo "ERROR: PARTS is empty (a1, a2, b, c, h)" >&2; exit 1; }
part() { [[ " $PARTS " == *" $1 "* ]]; }
for t in cc mkfs.ext4 losetup dbus-daemon busctl jq sqlite3; do
        command -v "$t" >/dev/null || { echo "ERROR: $t is required" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/seekless-bench.XXXXXX)
. "$SRC/tests/scratch.sh" && scratch_claim "$TMP"     # a test suite starting meanwhile leaves it alone
LOOP= MNT= BUS_PID= DAEMON_PID= DAEMON_NAME= SAMPLER_PID=
BROKEN=0

cleanup() {
        local rc=$?
        set +e
        if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
                kill -TERM "$DAEMON_PID"
                for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$DAEMON_PID" 2>/dev/null
                wait "$DAEMON_PID" 2>/dev/null
        fi
        [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
                umount "$MNT" 2>/dev/null || { sleep 1; umount -l "$MNT"; }
        fi
        [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { echo "ERROR: $*" >&2; if [ -n "$DAEMON_NAME" ] && [ -s "$TMP/$DAEMON_NAME.log" ]; then
                echo "---- $TMP/$DAEMON_NAME.log ----" >&2; tail -n 30 "$TMP/$DAEMON_NAME.log" >&2; fi; exit 1; }

wait_until() {      # SECONDS CMD...
        local t=$1 i; shift
        for ((i = 0; i < t * 10; i++)); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        return 1
}

random_boot_id() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

prop() {            # NAME -> value only
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager "$1" | cut -d' ' -f2-
}
boot_recording() { [ "$(prop BootRecording)" = true ]; }
boot_over() { [ "$(prop BootRecording)" = false ]; }
boot_profile() {    # FIELD of the "boot" profile (files, sessions), empty if none
        "$SEEKLESSCTL" --json=short profiles | jq -r --arg f "$1" '.[] | select(.name == "boot") | .[$f]'
}
boot_profile_at_least() { local v; v=$(boot_profile "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

status_kib() {      # PID FIELD (VmRSS, VmHWM) -> KiB
        awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

start_daemon() {    # NAME CONF STATE_DIR BOOT_ID
        DAEMON_NAME=$1
        "$SEEKLESSD" --config="$2" --state-dir="$3" --boot-id="$4" --filesystem="$MNT" --log-level=info $DAEMON_ARGS \
                >>"$TMP/$1.log" 2>&1 &
        DAEMON_PID=$!
        if ! wait_until 20 busctl --system status org.seekless.Seekless1; then
                die "seeklessd ($1) did not appear on the bus"
        fi
}

stop_daemon() {
        local rc=0
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID" || rc=$?
        if [ "$rc" != 0 ]; then
                echo "ANOMALY: seeklessd ($DAEMON_NAME) exited with status $rc on SIGTERM; log tail:" >&2
                tail -n 20 "$TMP/$DAEMON_NAME.log" >&2
                BROKEN=1
        fi
        DAEMON_PID=
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

file_size() { local f=$1 s=0; [ -e "$f" ] && s=$(stat -c %s "$f"); echo "$s"; }

# ---------------------------------------------------------------------------------------------- setup
log "seekless recorder benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)"
log "build: $BUILD; scratch: $TMP${DAEMON_ARGS:+; seeklessd options: $DAEMON_ARGS}; parts: $PARTS"
others=$(pgrep -x seeklessd || true)
[ -z "$others" ] || log "NOTE: other seeklessd processes are running (pids: $(echo $others)); they are not ours" \
        "and watch other filesystems, but they do add noise to the 'none' baseline"

# private copies: the binaries under test stay the same even if the build directory is rebuilt meanwhile
mkdir -p "$TMP/bin"
cp "$SEEKLESSD" "$SEEKLESSCTL" "$TMP/bin/"
SEEKLESSD=$TMP/bin/seeklessd SEEKLESSCTL=$TMP/bin/seeklessctl
log "source $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '(not a git tree)');" \
        "seeklessd $("$SEEKLESSD" --version 2>&1 | head -n 1), binary sha256 $(sha256sum "$SEEKLESSD" | cut -c1-12)"
cc -O2 -Wall -o "$TMP/openbench" "$SRC/bench/openbench.c" || die "cannot compile bench/openbench.c"
OB=$TMP/openbench    # lives on /tmp, not on the watched image: running it starts no launch session

IMG=$TMP/fs.img
MNT=$TMP/mnt
truncate -s 1536M "$IMG"
mkfs.ext4 -q -F -b 4096 -N 300000 -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
LOOP=$(losetup --find --show "$IMG")
mkdir -p "$MNT"
mount -t ext4 "$LOOP" "$MNT"
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

. "$SRC/tests/private-bus.sh"
chmod 755 "$TMP"           # the helper opens up the bus directory; the socket's parent must be reachable too
start_private_bus "$TMP/bus" "$SRC"
[ -n "$BUS_PID" ] || die "cannot start the private dbus-daemon"

printf '[Record]\nBootWindowSec=1\n' > "$TMP/idle.conf"
printf '[Record]\nBootWindowSec=600\n' > "$TMP/window.conf"
IDLE_BOOT=$(random_boot_id)

# -------------------------------------------------- (h) the exec permission mark alone
HOOK=
if part h; then
        log "(h) the exec permission mark alone: $HOOK_CYCLES cycles of 2 x ${HOOK_SLICE}s over tput/, no daemon"
        HOOK=$("$OB" --hook "$MNT" "$MNT/tput" "$NFILES" "$HOOK_CYCLES" "$HOOK_SLICE") || die "openbench --hook failed"
        log "  $HOOK"
fi

# -------------------------------------------------- (a1) throughput, repeated reads, interleaved
# Hot files, each read many times per window: openbench's warm-up pass reads every file once, so in a
# window the daemon has every file in its session before the timed loop starts. The daemon places its
# ignore mark when a read of a file that is already in the session reaches it, i.e. on the second read:
# the timed loop's first pass over the files still produces one event per file, after that the files
# are silenced, so the timed loop measures almost only repeat reads that cost no event.
CONFIGS=(none idle window)
MODES=(read mmap)
MEAS=(read:none read:idle read:window mmap:none mmap:idle mmap:window)   # rotated per round
declare -A OPS=()          # OPS[mode:config,round]
declare -A WINDOW_EVENTS=() WINDOW_OVERFLOWS=() WINDOW_RSS=() WINDOW_CPU=() WINDOW_PLOST=() WINDOW_RANGES=()
declare -A WINDOW_FILES=()
declare -A IDLE_RSS=() IDLE_EVENTS=() IDLE_CPU=()      # all [mode] -> space-separated per-round values
declare -A HOT_RESIDENT=()  # [mode:config]: pages of tput/ resident before each measurement (hot: all)
NOPAGES=0

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
        local m=${1%%:*} c=${1#*:} r=$2 out ops mark res
        mark=$(log_mark "$c")
        # hot: read them all once more with no daemon of ours running (other sessions on a shared machine
        # drop caches). Not kept mapped by a process instead: a window daemon adds the files that running
        # processes map to its boot session at start (and resolves them meanwhile)
        "$OB" "$MNT/tput" "$NFILES" 0 >/dev/null || die "openbench failed (re-warm)"
        res=$("$OB" --resident "$MNT/tput" "$NFILES") || die "openbench --resident failed"
        res=${res#*files, }; HOT_RESIDENT[$m:$c]+="${res%% *} "
        case $c in
        none)
                [ -z "$DAEMON_PID" ] || die "internal: a daemon is running during the no-daemon run"
                ;;
        idle)
                start_daemon idle "$TMP/idle.conf" "$TMP/state-idle" "$IDLE_BOOT"
                wait_until 30 boot_over || die "idle daemon: boot window did not close"
                ;;
        window)
                start_daemon window "$TMP/window.conf" "$TMP/state-window" "$(random_boot_id)"
                boot_recording || die "window daemon: boot window not open"
                ;;
        esac
        sleep 0.5
        out=$("$OB" $(ob_mode "$m") "$MNT/tput" "$NFILES" "$SECS") || die "openbench failed ($m $c)"
        ops=${out%% *}
        OPS[$m:$c,$r]=$ops
        case $c in
        idle)
                boot_over || die "idle daemon: a window opened during the measurement"
                IDLE_RSS[$m]+="$(status_kib "$DAEMON_PID" VmRSS) "
                IDLE_EVENTS[$m]+="$(prop EventsReceived) "
                IDLE_CPU[$m]+="$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat") "
                stop_daemon
                ;;
        window)
                boot_recording || die "window daemon: window closed during the measurement"
                WINDOW_EVENTS[$m]+="$(prop EventsReceived) "
                WINDOW_OVERFLOWS[$m]+="$(prop Overflows) "
                WINDOW_RSS[$m]+="$(status_kib "$DAEMON_PID" VmRSS) "
                WINDOW_CPU[$m]+="$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat") "
                stop_daemon
                read -r pl pr pf _ <<< "$(page_figures window "$mark")"
                WINDOW_PLOST[$m]+="$pl "; WINDOW_RANGES[$m]+="$pr "; WINDOW_FILES[$m]+="$pf "
                ;;
        esac
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

# medians, ratios of medians vs none of the same mode, and medians of per-round ratios (a cross-check)
declare -A MED=() RATIO=() PAIRED=()
ratios() {          # ARRAY_NAME PREFIX -> fills MED, RATIO, PAIRED under PREFIX:MODE:CONFIG
        local -n a=$1
        local m c
        for m in "${MODES[@]}"; do
                for c in "${CONFIGS[@]}"; do
                        MED[$2:$m:$c]=$(for ((r = 1; r <= ROUNDS; r++)); do echo "${a[$m:$c,$r]}"; done | median)
                done
                for c in idle window; do
                        RATIO[$2:$m:$c]=$(awk -v a="${MED[$2:$m:$c]}" -v b="${MED[$2:$m:none]}" 'BEGIN { printf "%.4f", a / b }')
                        PAIRED[$2:$m:$c]=$(for ((r = 1; r <= ROUNDS; r++)); do
                                awk -v a="${a[$m:$c,$r]}" -v b="${a[$m:none,$r]}" 'BEGIN { print a / b }'; done | median)
                done
        done
}
part a1 && ratios OPS a1
slowdown() { awk -v x="$1" 'BEGIN { printf "%.1f", (1 - x) * 100 }'; }
verdict() { awk -v s="$(slowdown "$1")" -v t="$2" 'BEGIN { print (s <= t) ? "PASS" : "FAIL" }'; }

# ------------------------------------------------------ (a2) throughput, first reads, interleaved
# ONE timed pass (openbench --once) over NFIRST files that the observer has not seen: every read in it
# is the first read of its file in the window, which the kernel reports (an ignore mark is only placed
# after the event reached the daemon). Each window measurement starts a fresh daemon (new boot ID), and
# its ignore marks die with its fanotify group, so no file was read before in that window. The
# FIRST_DIRS directories are disjoint and rotate over the configurations round by round; all are re-read
# with no daemon running at the start of each round, so each pass finds the same hot page, dentry and
# inode caches and no atime to update.
declare -A FOPS=()         # FOPS[mode:config,round]
declare -A FIRST_EVENTS=() FIRST_OVERFLOWS=() FIRST_CPU=() FIRST_IDLE_EVENTS=() FIRST_PLOST=() FIRST_RANGES=()
declare -A FIRST_RESIDENT=() FIRST_FILES=()
FIRST_DIR_OF=()

measure_first() {   # MODE:CONFIG ROUND DIR_INDEX
        local m=${1%%:*} c=${1#*:} r=$2 d=$3 out ops mark res name
        name=$c; [ "$c" = window ] && name=first
        mark=$(log_mark "$name")
        # cold: the pass's files' pages dropped, before a daemon starts (opening them raises no event then)
        res=$("$OB" --drop "$MNT/first/$d" "$NFIRST") || die "openbench --drop failed"
        res=${res#*files, }; FIRST_RESIDENT[$m:$c]+="${res%% *} "
        case $c in
        none)
                [ -z "$DAEMON_PID" ] || die "internal: a daemon is running during the no-daemon run"
                ;;
        idle)
                start_daemon idle "$TMP/idle.conf" "$TMP/state-idle" "$IDLE_BOOT"
                wait_until 30 boot_over || die "idle daemon: boot window did not close"
                ;;
        window)
                start_daemon first "$TMP/window.conf" "$TMP/state-first" "$(random_boot_id)"
                boot_recording || die "first-reads daemon: boot window not open"
                ;;
        esac
        sleep 0.5
        out=$("$OB" $(ob_mode "$m") --once "$MNT/first/$d" "$NFIRST") || die "openbench --once failed ($m $c)"
        ops=${out%% *}
        FOPS[$m:$c,$r]=$ops
        FIRST_DIR_OF[$r]+="$m:$c:$d "
        case $c in
        idle)
                boot_over || die "idle daemon: a window opened during the measurement"
                FIRST_IDLE_EVENTS[$m]+="$(prop EventsReceived) "
                stop_daemon
                ;;
        window)
                sleep 0.3   # let the daemon drain its queue before reading its counters
                boot_recording || die "first-reads daemon: window closed during the measurement"
                FIRST_EVENTS[$m]+="$(prop EventsReceived) "
                FIRST_OVERFLOWS[$m]+="$(prop Overflows) "
                FIRST_CPU[$m]+="$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat") "
                stop_daemon
                read -r pl pr pf _ <<< "$(page_figures first "$mark")"
                FIRST_PLOST[$m]+="$pl "; FIRST_RANGES[$m]+="$pr "; FIRST_FILES[$m]+="$pf "
                ;;
        esac
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
        ratios FOPS a2
        for m in "${MODES[@]}"; do
                for v in ${FIRST_OVERFLOWS[$m]}; do
                        [ "$v" = 0 ] || echo "ANOMALY: first-reads ($m): the fanotify queue overflowed ($v); events were lost," \
                                "which makes that pass cheaper than a real one" >&2
                done
                for v in ${FIRST_PLOST[$m]} ${WINDOW_PLOST[$m]}; do
                        [ "$v" = 0 ] || echo "ANOMALY: ($m) a window daemon lost $v page-cache event(s)" >&2
                done
                for v in ${FIRST_RESIDENT[$m:none]} ${FIRST_RESIDENT[$m:idle]} ${FIRST_RESIDENT[$m:window]}; do
                        [ "$v" = 0 ] || echo "ANOMALY: ($m) $v page(s) still resident after the drop before a cold pass" >&2
                done
        done
fi

# ------------------------------------------------------------------------------------ (b) RSS, 100k
if part b; then
        log "(b) RSS: one boot window, $NRSS distinct files read in bursts of $RSS_CHUNK"
        RSS_WINDOW=45          # long enough for the reads on a busy machine
        # MaxSessionFiles= (default 65536) raised so that the session takes all the files
        printf '[Record]\nBootWindowSec=%s\nMaxSessionFiles=%s\n' "$RSS_WINDOW" "$((NRSS * 2))" > "$TMP/rss.conf"
        # cold: every file's page dropped first, so each read also makes a page-cache event (and a page range)
        RSS_RESIDENT=0
        for ((c = 0; c < nchunks; c++)); do
                res=$("$OB" --drop "$MNT/rss/$c" "$(ls "$MNT/rss/$c" | wc -l)") || die "openbench --drop failed (rss)"
                res=${res#*files, }; RSS_RESIDENT=$(( RSS_RESIDENT + ${res%% *} ))
        done
        [ "$RSS_RESIDENT" = 0 ] || echo "ANOMALY: $RSS_RESIDENT page(s) of the rss files still resident after the drop" >&2
        RSS_MARK=$(log_mark rss)
        start_daemon rss "$TMP/rss.conf" "$TMP/state-rss" "$(random_boot_id)"
        RSS_START=$(status_kib "$DAEMON_PID" VmRSS)
        boot_recording || die "rss daemon: boot window not open"
        # sample VmRSS every 50 ms for the whole window and the storing after it: "seconds-since-start KiB"
        ( t0=$EPOCHREALTIME; while [ -r "/proc/$DAEMON_PID/status" ]; do
                echo "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') $(status_kib "$DAEMON_PID" VmRSS)"
                sleep 0.05
          done ) > "$TMP/rss-trace" 2>/dev/null &
        SAMPLER_PID=$!
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
        log "  window open: VmRSS $(mib "$RSS_DURING") MiB, VmHWM $(mib "$HWM_DURING") MiB (at start: $(mib "$RSS_START") MiB)," \
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
        log "  stored: boot profile has $RSS_FILES files; VmRSS $(mib "$RSS_AFTER") MiB, VmHWM $(mib "$HWM_AFTER") MiB," \
                "DatabaseSize $RSS_DBSIZE B"
        stop_daemon
        read -r RSS_PLOST RSS_RANGES _ RSS_META <<< "$(page_figures rss "$RSS_MARK")"
        [ "$RSS_PLOST" = 0 ] || echo "ANOMALY: the rss daemon lost $RSS_PLOST page-cache event(s)" >&2
        wait "$SAMPLER_PID" 2>/dev/null || true
        # highest sampled VmRSS and when, relative to daemon start; the window closed at RSS_WINDOW s
        RSS_PEAK_SAMPLE=$(sort -k2,2n "$TMP/rss-trace" | awk 'NF == 2 { l = $0 } END { print l }')
        [ "$RSS_FILES" = "$NRSS" ] || echo "ANOMALY: boot profile holds $RSS_FILES files, expected $NRSS" >&2
        le20() { awk -v a="$1" 'BEGIN { print (a <= 20 * 1024) ? "PASS" : "FAIL" }'; }
fi

# -------------------------------------------------------------------------------- (c) DB growth
if part c; then
        log "(c) database growth: $BOOTS boots, each reading the same $NBOOT files, cold"
        printf '[Record]\nBootWindowSec=4\n' > "$TMP/growth.conf"
        GSTATE=$TMP/state-growth
        DB=$GSTATE/seekless.db
        GROW_SIZE=() GROW_PAGES=() GROW_FILES=() GROW_DBSIZE_PROP=()
        for ((b = 1; b <= BOOTS; b++)); do
                "$OB" --drop "$MNT/boot5k" "$NBOOT" >/dev/null || die "openbench --drop failed (growth)"
                start_daemon growth "$TMP/growth.conf" "$GSTATE" "$(random_boot_id)"
                boot_recording || die "growth daemon: boot window not open"
                "$OB" "$MNT/boot5k" "$NBOOT" 0 >/dev/null || die "openbench failed (growth)"
                boot_recording || echo "ANOMALY: growth boot $b: the window closed before the reads were done" >&2
                wait_until 30 boot_over || die "growth daemon: boot window did not close"
                wait_until 60 boot_profile_at_least sessions "$b" || die "growth daemon: boot $b not stored"
                GROW_FILES+=("$(boot_profile files)")
                GROW_DBSIZE_PROP+=("$(prop DatabaseSize)")
                stop_daemon
                sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
                GROW_SIZE+=("$(( $(file_size "$DB") + $(file_size "$DB-wal") ))")
                GROW_PAGES+=("$(sqlite3 "$DB" 'PRAGMA page_size;' | tr -d '\n')x$(sqlite3 "$DB" 'PRAGMA page_count;' | tr -d '\n'), free $(sqlite3 "$DB" 'PRAGMA freelist_count;')")
                log "  boot $b: profile files ${GROW_FILES[-1]}, DB $(( GROW_SIZE[-1] )) B (pages ${GROW_PAGES[-1]})," \
                        "DatabaseSize property before stop ${GROW_DBSIZE_PROP[-1]} B"
        done
        TABLES=$(sqlite3 "$DB" "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC;" 2>/dev/null || echo "(dbstat unavailable)")
fi

# ------------------------------------------------------------------------------------------ summary
echo
echo "================ seekless recorder benchmark ================"
echo "date $(date -u '+%Y-%m-%d %H:%M UTC'); kernel $(uname -r); $(nproc) CPU(s); $NFILES files, ${SECS}s x $ROUNDS rounds"
echo
print_part() {       # PREFIX ARRAY_NAME MODE
        local -n o=$2
        local m=$3 c
        printf '%-8s' round; for c in "${CONFIGS[@]}"; do printf '%12s' "$c"; done; printf '%12s%12s\n' idle/none window/none
        for ((r = 1; r <= ROUNDS; r++)); do
                printf '%-8s' "$r"; for c in "${CONFIGS[@]}"; do printf '%12s' "${o[$m:$c,$r]}"; done
                awk -v i="${o[$m:idle,$r]}" -v w="${o[$m:window,$r]}" -v n="${o[$m:none,$r]}" 'BEGIN { printf "%12.3f%12.3f\n", i / n, w / n }'
        done
        printf '%-8s' median; for c in "${CONFIGS[@]}"; do printf '%12s' "${MED[$1:$m:$c]}"; done
        printf '%12s%12s\n' "${RATIO[$1:$m:idle]}" "${RATIO[$1:$m:window]}"
        printf '  %-34s ratio %s (slowdown %5s%%; median of per-round ratios %.4f)  target <= 2%%   %s\n' \
                "daemon idle vs no daemon:" "${RATIO[$1:$m:idle]}" "$(slowdown "${RATIO[$1:$m:idle]}")" \
                "${PAIRED[$1:$m:idle]}" "$(verdict "${RATIO[$1:$m:idle]}" 2)"
        printf '  %-34s ratio %s (slowdown %5s%%; median of per-round ratios %.4f)  target <= 30%%  %s\n' \
                "daemon in window vs no daemon:" "${RATIO[$1:$m:window]}" "$(slowdown "${RATIO[$1:$m:window]}")" \
                "${PAIRED[$1:$m:window]}" "$(verdict "${RATIO[$1:$m:window]}" 30)"
}

if part a1; then
        echo "(a1) REPEATED READS, hot cache: ops/s, one process, ${SECS}s after a warm-up pass over the $NFILES files"
        for m in "${MODES[@]}"; do
                echo
                echo " mode $m ($([ "$m" = read ] && echo 'open, read to EOF, close' || echo 'open, fstat, mmap, close, touch every page, munmap'))"
                print_part a1 OPS "$m"
                echo "  window daemon per round: fanotify events received ${WINDOW_EVENTS[$m]}; overflows ${WINDOW_OVERFLOWS[$m]};"
                echo "    page-cache events lost ${WINDOW_PLOST[$m]}; page ranges stored ${WINDOW_RANGES[$m]};" \
                        "files in the stored session ${WINDOW_FILES[$m]};"
                echo "    CPU ticks (utime+stime, 1/$(getconf CLK_TCK) s) ${WINDOW_CPU[$m]}; VmRSS KiB ${WINDOW_RSS[$m]}"
                echo "  idle daemon per round: events received ${IDLE_EVENTS[$m]}; CPU ticks ${IDLE_CPU[$m]}; VmRSS KiB ${IDLE_RSS[$m]}"
                echo "  pages of tput/ resident before each measurement (none, idle, window):" \
                        "${HOT_RESIDENT[$m:none]}/ ${HOT_RESIDENT[$m:idle]}/ ${HOT_RESIDENT[$m:window]}"
        done
        echo "  (hot: no page is inserted, so no page-cache events are expected; in a window the warm-up pass is each file's"
        echo "  first read, and reads before the daemon's ignore marks are placed still raise fanotify events)"
        echo
fi
if part h; then
        echo "(h) THE EXEC PERMISSION MARK ALONE (what an idle seeklessd holds on each watched filesystem; no daemon running):"
        echo "  the (a1) read loop in alternating ${HOOK_SLICE}s slices, $HOOK_CYCLES cycles, one process; ratio marked/unmarked:"
        echo "  $HOOK"
        med=$(sed -E 's/^marked\/unmarked median ([0-9.]+) .*/\1/' <<<"$HOOK")
        echo "  slowdown $(slowdown "$med")% by the median: the kernel's part of the idle daemon's cost, whatever the daemon does"
        echo
fi
if part a2; then
        echo "(a2) FIRST READS, cold (each file's pages dropped with POSIX_FADV_DONTNEED before the pass, before any daemon"
        echo "     started; each file read once, none read before in that window): ops/s of ONE pass over $NFIRST files"
        for m in "${MODES[@]}"; do
                echo
                echo " mode $m"
                print_part a2 FOPS "$m"
                echo "  window daemon per round: fanotify events received ${FIRST_EVENTS[$m]}; overflows ${FIRST_OVERFLOWS[$m]};"
                echo "    page-cache events lost ${FIRST_PLOST[$m]}; page ranges stored ${FIRST_RANGES[$m]} (one page per file:"
                echo "    expected $NFIRST each); files in the stored session ${FIRST_FILES[$m]}; CPU ticks (incl. start-up) ${FIRST_CPU[$m]}"
                echo "  idle daemon per round: events received ${FIRST_IDLE_EVENTS[$m]}"
                echo "  pages still resident after the drop (none, idle, window): ${FIRST_RESIDENT[$m:none]}/ ${FIRST_RESIDENT[$m:idle]}/ ${FIRST_RESIDENT[$m:window]}"
        done
        echo "  dirs per round: $(for ((r = 1; r <= ROUNDS; r++)); do printf '%s; ' "${FIRST_DIR_OF[$r]% }"; done)"
        echo
fi
if part b; then
        echo "(b) daemon memory, one boot window recording $NRSS distinct files"
        echo "  at start:                     VmRSS $(mib "$RSS_START") MiB"
        echo "  window open, files read:      VmRSS $(mib "$RSS_DURING") MiB, VmHWM $(mib "$HWM_DURING") MiB (events $RSS_EVENTS, overflows $RSS_OVERFLOWS)"
        echo "    largest resident mappings then (resident/size): $RSS_MAPS"
        echo "  after the session was stored: VmRSS $(mib "$RSS_AFTER") MiB, VmHWM $(mib "$HWM_AFTER") MiB (profile files: $RSS_FILES; stored ${RSS_FLUSH_WAIT}s after the window closed; DB $RSS_DBSIZE B)"
        echo "  page-cache events lost $RSS_PLOST; page ranges of the stored boot session $RSS_RANGES, metadata ranges $RSS_META (files read cold:"
        echo "  $RSS_RESIDENT pages resident after the drop); stored session complete: $RSS_COMPLETE"
        echo "  highest sampled VmRSS (50 ms sampling): $(mib "${RSS_PEAK_SAMPLE#* }") MiB at ${RSS_PEAK_SAMPLE%% *} s after start" \
                "(window of ${RSS_WINDOW} s; BootRecording seen false at $RSS_T_CLOSED s)"
        echo "  target 20 MiB: RSS while recording (VmHWM, window open) $(le20 "$HWM_DURING");" \
                "RSS after recording $(le20 "$RSS_AFTER"); peak incl. storing (VmHWM) $(le20 "$HWM_AFTER")"
        echo
fi
if part c; then
        echo "(c) database growth per recorded boot of $NBOOT files read cold, with their page ranges (after wal_checkpoint(TRUNCATE))"
        prev=0
        for ((b = 0; b < BOOTS; b++)); do
                printf '  boot %d: %10s B total  %+10d B  (%s; profile files %s)\n' $((b + 1)) "${GROW_SIZE[b]}" \
                        $(( GROW_SIZE[b] - prev )) "${GROW_PAGES[b]}" "${GROW_FILES[b]}"
                prev=${GROW_SIZE[b]}
        done
        if [ "$BOOTS" -ge 2 ]; then
                later=$(awk -v a="${GROW_SIZE[0]}" -v b="${GROW_SIZE[BOOTS-1]}" -v n=$((BOOTS - 1)) 'BEGIN { printf "%.0f", (b - a) / n }')
                echo "  first boot (incl. empty schema): ${GROW_SIZE[0]} B ($(awk -v s="${GROW_SIZE[0]}" -v n="$NBOOT" 'BEGIN { printf "%.0f", s / n }') B/file);" \
                        "later boots: $later B/boot ($(awk -v s="$later" -v n="$NBOOT" 'BEGIN { printf "%.1f", s / n }') B/file)"
        fi
        echo "  space by table/index after $BOOTS boots (dbstat):"
        echo "$TABLES" | sed 's/^/    /'
fi
echo "============================================================="
[ "$BROKEN" = 0 ] || { echo "ERROR: a daemon did not exit cleanly (see ANOMALY above)" >&2; exit 1; }
exit 0
