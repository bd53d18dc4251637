#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What seeklessd adds to an exec. See bench/README.md.
#
#   sudo bench/exec-latency.sh [BUILD_DIR [BASE_BUILD_DIR]]      (default: build/, no base)
#
# A static program that exits at once, on a scratch loop-mounted ext4 filesystem with a second one beside
# it (both watched), is exec'd RUNS times in a row (bench/execlat.c: fork to exit, per exec), ROUNDS
# rounds, the configurations taken in turn within each round:
#   none              no seeklessd;
#   quiet (BUILD)     a seeklessd that holds only its exec permission marks, each exec waiting until the
#                     last one's window (LaunchWindowSec=0.05) closed: every exec is the first of a quiet
#                     daemon, which arms both filesystems (and the page events) before it lets it go;
#   window (BUILD)    a seeklessd whose launch window stays open: the exec is forwarded, nothing armed;
# and the same two for BASE_BUILD_DIR's seeklessd when given (e.g. a build of the commit before, for a
# before/after in one run). Prints each measurement as a JSON line (bench, label, runs, median_us, p90_us,
# p99_us, max_us), then the medians over the rounds and what each daemon adds to "none".
# Needs root (fanotify, loop devices); no bus (seeklessd records without one).
#
# Knobs (environment): ROUNDS=5 RUNS=200 DAEMON_ARGS="" (more seeklessd options)

set -euo pipefail

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-200}
DAEMON_ARGS=${DAEMON_ARGS:-}
SRC=$(cd "$(dirname "$0")/.." && pwd)
abs() { local d=$1; [ -d "$d" ] || d=$SRC/$d; (cd "$d" && pwd); }
BUILD=$(abs "${1:-build}")
BASE=
[ -z "${2:-}" ] || BASE=$(abs "$2")

if [ "$(id -u)" != 0 ]; then
        echo "SKIP: bench/exec-latency.sh needs root (fanotify, loop devices)"
        exit 77
fi

TMP=$(mktemp -d /tmp/seekless-bench-exec.XXXXXX)
. "$SRC/tests/scratch.sh" && scratch_claim "$TMP"
LOOPS=() MNTS=() DAEMON_PID=

cleanup() {
        local rc=$?
        set +e
        if [ -n "$DAEMON_PID" ]; then kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; fi
        for m in "${MNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
        for l in "${LOOPS[@]}"; do losetup -d "$l"; done
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }

image() {       # NAME SIZE -> mounted at $TMP/NAME, rotational
        local l
        truncate -s "$2" "$TMP/$1.img"
        mkfs.ext4 -q -F -b 4096 "$TMP/$1.img"
        l=$(losetup --find --show "$TMP/$1.img")
        LOOPS+=("$l")
        echo 1 > "/sys/block/${l#/dev/}/queue/rotational"
        mkdir -p "$TMP/$1"
        mount -t ext4 "$l" "$TMP/$1"
        MNTS+=("$TMP/$1")
}

log "seekless exec latency: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)," \
        "load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$TMP/bin"
cp "$BUILD/daemon/seeklessd" "$TMP/bin/seeklessd"
[ -z "$BASE" ] || cp "$BASE/daemon/seeklessd" "$TMP/bin/seeklessd.base"
cc -O2 -Wall -o "$TMP/bin/execlat" "$SRC/bench/execlat.c"
image a 64M
image b 32M
printf 'int main(void) { return 0; }\n' > "$TMP/nop.c"
cc -O2 -static -o "$TMP/a/nop" "$TMP/nop.c"
sync
log "build $BUILD ($(git -C "$SRC" describe --always --dirty 2>/dev/null))${BASE:+, base $BASE}"

# quiet: each launch's window closes in 50 ms; window: it stays open for the whole measurement
conf() {        # NAME WINDOW_SEC
        printf '[Record]\nBootWindowSec=0.05\nLaunchWindowSec=%s\nMaxLaunchesPerBoot=1000\nMinLaunchFiles=1\n' "$2" \
                > "$TMP/$1.conf"
}
conf quiet 0.05
conf window 3600

start() {       # BINARY CONF
        rm -rf "$TMP/state"
        "$1" --config="$2" --state-dir="$TMP/state" --run-dir="$TMP/run" --filesystem="$TMP/a" \
                --filesystem="$TMP/b" --log-level=warning $DAEMON_ARGS >>"$TMP/daemon.log" 2>&1 &
        DAEMON_PID=$!
        sleep 1         # started, boot window over
}
stop() { kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; DAEMON_PID=; }

measure() {     # LABEL [BINARY MODE]
        if [ $# = 1 ]; then
                "$TMP/bin/execlat" "$1" "$RUNS" "$TMP/a/nop"
                return
        fi
        start "$2" "$TMP/$3.conf"
        if [ "$3" = quiet ]; then
                "$TMP/bin/execlat" --quiet-pid="$DAEMON_PID" "$1" "$RUNS" "$TMP/a/nop"
        else
                "$TMP/a/nop"; sleep 0.5     # the window opens and stays
                "$TMP/bin/execlat" "$1" "$RUNS" "$TMP/a/nop"
        fi
        stop
}

: > "$TMP/results"
for ((round = 1; round <= ROUNDS; round++)); do
        measure none | tee -a "$TMP/results"
        for mode in quiet window; do
                measure "$mode" "$TMP/bin/seeklessd" "$mode" | tee -a "$TMP/results"
                [ -z "$BASE" ] || measure "$mode-base" "$TMP/bin/seeklessd.base" "$mode" | tee -a "$TMP/results"
        done
done

echo
echo "medians over $ROUNDS rounds of $RUNS execs (us): median p90 p99, and the median's excess over none"
jq -rs 'group_by(.label) | map({label: .[0].label,
                m: (map(.median_us) | sort | .[length / 2 | floor]),
                p90: (map(.p90_us) | sort | .[length / 2 | floor]),
                p99: (map(.p99_us) | sort | .[length / 2 | floor])}) as $g
        | ($g[] | select(.label == "none") | .m) as $none
        | $g[] | "\(.label)\t\(.m)\t\(.p90)\t\(.p99)\t+\(.m - $none)"' "$TMP/results" | column -t
