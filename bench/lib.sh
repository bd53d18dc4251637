# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The benchmarks' harness (sourced), on tests/lib-core.sh as tests/lib.sh is: the root check, the build's
# binaries, the scratch directory, a private tracefs instance, the private bus, seeklessd, one cleanup trap,
# and the results file that bench/summary.sh prints.
#
#   bench_dirs NAME -- ARGS...    SKIP and exit 77 unless root; $BENCH=NAME, $SRC, $BUILD (ARGS' first,
#                                 default build/)
#   bench_init NAME [TOOL...] -- ARGS...   bench_dirs; the TOOLs must be on PATH; the scratch directory $TMP
#                                 (in $BENCH_SCRATCH, default /tmp; claimed, and guarded unless KEEP=1) with
#                                 $RESULTS=$TMP/results.jsonl; the cleanup trap. ARGS: the script's "$@"
#   bench_binaries PATH...        the build's PATHs (daemon/seeklessd, cli/seeklessctl, ...) copied to $TMP/bin
#                                 (a rebuild meanwhile does not change what is measured) -> BIN[name]; sets
#                                 SEEKLESSD and SEEKLESSCTL when among them
#   bench_cc OUT SOURCE...        a bench helper compiled against the daemon's sources into $TMP/OUT
#   bench_source                  "source <git describe>" for the log
#   tracefs_ready                 tracefs mounted at $TRACEFS (mounted here if it is not; unmounted at exit)
#   trace_setup BUFFER_KIB        a private tracefs instance $TRACE_INST (own buffer, events and filter: the
#                                 machine's tracing is untouched), tracing off
#   trace_dev DEV                 block:block_rq_issue of block device DEV only, enabled; trace_undev
#   trace_run OUT CMD...          CMD with tracing on (buffer cleared before), the trace copied to OUT
#   trace_lost FILE [WHAT]        an ANOMALY when the trace's buffer lost events
#   cold                          drop_all_caches
#   copy_in_order FROM TO PATH... the PATHs (relative) copied from FROM to TO in that order, each synced
#                                 before the next: allocated in that order
#   start_bus                     the private bus (tests/private-bus.sh) in $TMP/bus
#   start_daemon NAME CONF STATE OPTION...  seeklessd (--log-level=info, OPTIONs after) logging to
#                                 $TMP/NAME.log -> $DAEMON_PID; waits until it owns its bus name when a
#                                 bus of ours runs
#   stop_daemon                   SIGTERM, waits; 1 and an ANOMALY (BROKEN=1) if it exits with a status
#   start_seekless CONF STATE MOUNT  seeklessd "daemon" ($TMP/daemon.log) on MOUNT with a new boot ID, its
#                                 boot window over; stop_seekless: stop_daemon, or die
#   prop NAME; boot_over; boot_recording; optimizing; has_profile NAME; random_boot_id
#   BENCH_PIDS+=(PID)             background processes stopped at exit (before the daemon)
#   cleanup_hook                  defined by a bench: run first at exit (what the order below does not fit)
#   result KEY VALUE...           one JSON line {"bench": NAME, KEY: VALUE...} appended to $RESULTS
#   result_with JSON KEY VALUE... the same, JSON's members (a helper's output) added
#   jv KEY JSON                   a member of a JSON object ("" when absent)
#   bench_finish                  the results copied to $RESULTS_OUT (default: results-NAME.jsonl in the
#                                 current directory when it is writable, else none), bench/summary.sh of
#                                 them; exit 1 if BROKEN
#
# At exit (the trap): cleanup_hook, BENCH_PIDS, the daemon, the bus, the trace instance, the mounts and loop devices
# (release_mounts_and_loops), tracefs if mounted here; the scratch directory removed unless KEEP=1.

set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib-core.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../tests/scratch.sh"

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH= BUILD= TMP= RESULTS= KEEP=${KEEP:-0} BROKEN=0
BUS_PID= DAEMON_PID= DAEMON_NAME= TRACE_INST= TRACEFS_MOUNTED=
TRACEFS=/sys/kernel/tracing
BENCH_PIDS=()
declare -A BIN=()

# the daemon's last log lines after an error
die_hook() {
        [ -n "$DAEMON_NAME" ] && [ -s "$TMP/$DAEMON_NAME.log" ] || return 0
        echo "---- $TMP/$DAEMON_NAME.log ----" >&2
        tail -n 30 "$TMP/$DAEMON_NAME.log" >&2
}

bench_dirs() {      # NAME -- SCRIPT-ARGS...
        BENCH=$1
        shift 2
        if [ "$(id -u)" != 0 ]; then
                echo "SKIP: bench/$BENCH.sh needs root: sudo $0 ${1:-build}"
                exit 77
        fi
        BUILD=${1:-build}
        [ -d "$BUILD" ] || BUILD=$SRC/$BUILD
        BUILD=$(cd "$BUILD" && pwd)
}

bench_init() {      # NAME [TOOL...] -- SCRIPT-ARGS...
        local t name=$1 tools=()
        shift
        while [ $# -gt 0 ] && [ "$1" != -- ]; do tools+=("$1"); shift; done
        [ $# = 0 ] || shift
        bench_dirs "$name" -- "$@"
        for t in "${tools[@]}"; do
                command -v "$t" >/dev/null || die "$t is required"
        done
        TMP=$(mktemp -d "${BENCH_SCRATCH:-/tmp}/seekless-bench-$BENCH.XXXXXX")
        scratch_claim "$TMP"     # a test suite starting meanwhile leaves it alone
        [ "$KEEP" = 1 ] || scratch_guard "$TMP"   # and what a killed run leaves is removed
        RESULTS=$TMP/results.jsonl
        : > "$RESULTS"
        trap bench_cleanup EXIT
        trap 'exit 130' INT TERM
}

bench_cleanup() {
        local rc=$? p
        set +eu
        if declare -F cleanup_hook >/dev/null; then cleanup_hook; fi
        for p in "${BENCH_PIDS[@]}"; do
                kill -TERM "$p" 2>/dev/null && { wait_pid_gone "$p" 10 || kill -KILL "$p" 2>/dev/null; }
                wait "$p" 2>/dev/null
        done
        if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
                kill -TERM "$DAEMON_PID"
                wait_pid_gone "$DAEMON_PID" 10 || kill -KILL "$DAEMON_PID" 2>/dev/null
                wait "$DAEMON_PID" 2>/dev/null
        fi
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
        if [ -n "$TRACE_INST" ] && [ -d "$TRACE_INST" ]; then
                echo 0 > "$TRACE_INST/tracing_on"
                trace_undev
                rmdir "$TRACE_INST"
        fi
        release_mounts_and_loops
        [ -n "$TRACEFS_MOUNTED" ] && umount "$TRACEFS"
        if [ "$KEEP" = 1 ]; then
                echo "KEEP=1: scratch directory kept: $TMP" >&2
                touch "$TMP/.keep"
        else
                rm -rf "$TMP"
        fi
        exit "$rc"
}

bench_binaries() {  # PATH... (relative to the build directory)
        local p n
        mkdir -p "$TMP/bin"
        for p in "$@"; do
                n=${p##*/}
                [ -x "$BUILD/$p" ] || die "$BUILD/$p not found; build first (ninja -C build; bench/README.md names the bench targets)"
                cp "$BUILD/$p" "$TMP/bin/$n"
                BIN[$n]=$TMP/bin/$n
        done
        SEEKLESSD=${BIN[seeklessd]:-} SEEKLESSCTL=${BIN[seeklessctl]:-}
}

bench_cc() {        # OUT SOURCE... (relative to the source root)
        local out=$1 s srcs=()
        shift
        for s in "$@"; do srcs+=("$SRC/$s"); done
        cc -O2 -Wall -std=gnu11 -I "$SRC" -I "$SRC/daemon" -o "$TMP/$out" "${srcs[@]}" -lm || die "cannot compile $1"
}

bench_source() { echo "source $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '(not a git tree)')"; }

tracefs_ready() {
        [ ! -e "$TRACEFS/instances" ] || return 0
        mount -t tracefs nodev "$TRACEFS" || die "cannot mount tracefs at $TRACEFS"
        TRACEFS_MOUNTED=1
}

trace_setup() {     # BUFFER_KIB
        tracefs_ready
        TRACE_INST=$TRACEFS/instances/seekless-$BENCH-$$
        mkdir "$TRACE_INST" || { TRACE_INST=; die "cannot create a tracefs instance"; }
        echo 0 > "$TRACE_INST/tracing_on"
        echo "$1" > "$TRACE_INST/buffer_size_kb"
}

trace_dev() {       # DEV: its device number as the kernel's (major << 20 | minor)
        local majmin
        majmin=$(cat "/sys/block/${1#/dev/}/dev")
        echo "dev == $(( (${majmin%:*} << 20) | ${majmin#*:} ))" > "$TRACE_INST/events/block/block_rq_issue/filter"
        echo 1 > "$TRACE_INST/events/block/block_rq_issue/enable"
}
trace_undev() {
        echo 0 > "$TRACE_INST/events/block/block_rq_issue/enable"
        echo 0 > "$TRACE_INST/events/block/block_rq_issue/filter"
}

trace_run() {       # OUT CMD...
        local out=$1 rc=0
        shift
        : > "$TRACE_INST/trace"
        echo 1 > "$TRACE_INST/tracing_on"
        "$@" || rc=$?
        echo 0 > "$TRACE_INST/tracing_on"
        cat "$TRACE_INST/trace" > "$out"
        return "$rc"
}

trace_lost() {      # FILE [WHAT]
        local lost
        lost=$(sed -n 's/^# entries-in-buffer\/entries-written: \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$1")
        [ "${lost% *}" = "${lost#* }" ] || echo "ANOMALY: ${2:-$1}: trace buffer lost events (in buffer/written: $lost)" >&2
}

cold() { drop_all_caches; }

# (delayed allocation would pick the order at writeback)
copy_in_order() {   # FROM TO PATH...
        local from=$1 to=$2 p
        shift 2
        for p in "$@"; do
                mkdir -p "$to/$(dirname "$p")"
                cp -p "$from/$p" "$to/$p"
                sync "$to/$p"
        done
}

start_bus() {
        . "$SRC/tests/private-bus.sh"
        chmod 755 "$TMP"         # the helper opens up the bus directory; the socket's parent must be reachable too
        start_private_bus "$TMP/bus" "$SRC" || die "cannot start the private dbus-daemon"
}

start_daemon() {    # NAME CONF STATE_DIR [OPTION...]
        DAEMON_NAME=$1
        "$SEEKLESSD" --config="$2" --state-dir="$3" --log-level=info "${@:4}" >>"$TMP/$1.log" 2>&1 &
        DAEMON_PID=$!
        [ -z "$BUS_PID" ] || wait_until 20 busctl --system status org.seekless.Seekless1 ||
                die "seeklessd ($1) did not appear on the bus"
}

stop_daemon() {
        local rc=0
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID" || rc=$?
        DAEMON_PID=
        [ "$rc" != 0 ] || return 0
        echo "ANOMALY: seeklessd ($DAEMON_NAME) exited with status $rc on SIGTERM; log tail:" >&2
        tail -n 20 "$TMP/$DAEMON_NAME.log" >&2
        BROKEN=1
        return 1
}

start_seekless() {  # CONF STATE_DIR MOUNT
        start_daemon daemon "$1" "$2" --boot-id="$(random_boot_id)" --filesystem="$3"
        wait_until 30 boot_over || die "boot window did not close"
}
stop_seekless() { stop_daemon || die "seeklessd exited with a status on SIGTERM"; }

prop() {            # NAME -> its value only
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager "$1" | cut -d' ' -f2-
}
boot_over() { [ "$(prop BootRecording)" = false ]; }
boot_recording() { [ "$(prop BootRecording)" = true ]; }
optimizing() { [ "$(prop Optimizing)" = true ]; }
has_profile() { "$SEEKLESSCTL" --json=short profiles | jq -e --arg n "$1" 'any(.[]; .name == $n)'; }
random_boot_id() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

result() { json_line bench "$BENCH" "$@" >> "$RESULTS"; }
result_with() {     # JSON KEY VALUE...
        local j=$1
        shift
        json_line bench "$BENCH" "$@" | jq -c --argjson o "$j" '. + $o' >> "$RESULTS"
}
jv() { jq -r --arg k "$1" '.[$k] // "" | tostring' <<< "$2"; }

bench_finish() {
        local out=${RESULTS_OUT:-}
        if [ -z "$out" ] && [ -w . ]; then out=$PWD/results-$BENCH.jsonl; fi
        echo
        bash "$SRC/bench/summary.sh" "$RESULTS"
        if [ -n "$out" ]; then
                cp "$RESULTS" "$out"
                echo "results: $out ($(wc -l < "$out") JSON lines; bench/summary.sh $out prints the above again)"
        fi
        [ "$BROKEN" = 0 ] || { echo "ERROR: a daemon did not exit cleanly (see ANOMALY above)" >&2; exit 1; }
        exit 0
}
