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
. "$(dirname "$0")/lib.sh"
bench_init exec-latency cc mkfs.ext4 losetup jq -- "$@"
BASE=
[ -z "${2:-}" ] || { BASE=${2%/}; [ -d "$BASE" ] || BASE=$SRC/$BASE; BASE=$(cd "$BASE" && pwd); }

image() {       # NAME SIZE -> mounted at $TMP/NAME, rotational
        make_ext4_image "$TMP/$1.img" "$2"
        attach "$TMP/$1.img" 1
        do_mount "$ATTACHED" "$TMP/$1"
}

log "seekless exec latency: $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s)," \
        "load $(cut -d' ' -f1-3 /proc/loadavg)"
bench_binaries daemon/seeklessd
[ -z "$BASE" ] || cp "$BASE/daemon/seeklessd" "$TMP/bin/seeklessd.base"
bench_cc execlat bench/execlat.c
image a 64M
image b 32M
printf 'int main(void) { return 0; }\n' > "$TMP/nop.c"
cc -O2 -static -o "$TMP/a/nop" "$TMP/nop.c"
sync
log "build $BUILD ($(git -C "$SRC" describe --always --dirty 2>/dev/null))${BASE:+, base $BASE}"

# quiet: each launch's window closes in 50 ms; window: it stays open for the whole measurement
conf() {        # NAME WINDOW_SEC
        printf '[Record]\nRecorder='"${RECORDER:-fanotify}"'\nBootWindowSec=0.05\nLaunchWindowSec=%s\nMaxLaunchesPerBoot=1000\nMinLaunchFiles=1\n' "$2" \
                > "$TMP/$1.conf"
}
conf quiet 0.05
conf window 3600

start() {       # BINARY CONF
        rm -rf "$TMP/state"
        # shellcheck disable=SC2086
        SEEKLESSD=$1 start_daemon daemon "$2" "$TMP/state" --run-dir="$TMP/run" --filesystem="$TMP/a" \
                --filesystem="$TMP/b" --log-level=warning $DAEMON_ARGS
        sleep 1         # started, boot window over
}

measure() {     # LABEL [BINARY MODE]
        if [ $# = 1 ]; then
                "$TMP/execlat" "$1" "$RUNS" "$TMP/a/nop"
                return
        fi
        start "$2" "$TMP/$3.conf"
        if [ "$3" = quiet ]; then
                "$TMP/execlat" --quiet-pid="$DAEMON_PID" "$1" "$RUNS" "$TMP/a/nop"
        else
                "$TMP/a/nop"; sleep 0.5     # the window opens and stays
                "$TMP/execlat" "$1" "$RUNS" "$TMP/a/nop"
        fi
        stop_seekless
}
# a measurement of ROUND (not in a pipe: the daemon it starts must stay known to the cleanup), its JSON line
# printed and kept as a result
keep() {        # ROUND LABEL [BINARY MODE]
        local line
        measure "${@:2}" > "$TMP/line"
        line=$(cat "$TMP/line")
        echo "$line"
        result_with "$line" measure exec variant "$2" round "$1"
}

for ((round = 1; round <= ROUNDS; round++)); do
        keep "$round" none
        for mode in quiet window; do
                keep "$round" "$mode" "$TMP/bin/seeklessd" "$mode"
                [ -z "$BASE" ] || keep "$round" "$mode-base" "$TMP/bin/seeklessd.base" "$mode"
        done
done
result measure run rounds "$ROUNDS" runs "$RUNS"
bench_finish
