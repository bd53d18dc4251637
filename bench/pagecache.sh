#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cost of page-cache recording (daemon/record/pagecache.c, the tracepoint filemap:mm_filemap_add_to_page_cache
# in a tracefs instance of its own). See bench/README.md and doc/page-recording.md.
#
#   sudo bench/pagecache.sh [BUILD_DIR]        (default: build/; builds bench/pagecache-bench there)
#
# a. Workload cost, three configurations per round in rotated order: `off` (no instance), `other` (the event
#    enabled, its filter matching another filesystem: what every filesystem not recorded pays during a
#    window), `match` (the filter matches, a consumer drains when poll() says a CPU's buffer is 25% full,
#    at least every second; 1 MiB per CPU: the engine's default). Three workloads of page-cache insertions
#    on a loop-mounted ext4 in memory (a worst case: the "disk" costs next to nothing): cold read()
#    (readahead off: one order-0 page per event), cold mmap page faults (MADV_RANDOM: the same), and writes
#    of new pages (no read at all; ext4 inserts 16-page folios for 64 KiB writes). Reported per run: pages/s and the workload's CPU time per page; medians and
#    min-max over the rounds.
# b. Consumer capacity: two cold readers at once (one per CPU) for SECS_B seconds, the consumer draining every
#    100 ms or every 1000 ms, or woken by poll() when a CPU's buffer is 25% or 50% full (the instance's
#    buffer_percent), with per-CPU buffers of 128 KiB to 4 MiB: events/s, lost events, the consumer's CPU
#    time.
# c. (with perf) Where the workload's CPU time goes: `perf record -e cpu-clock` of each workload (2 s) in each
#    configuration, ROUNDS times, and the share of its samples in the tracing code (event reserve and commit, ring
#    buffer, filter): a figure that other load on the machine hardly moves, unlike (a)'s.
# Knobs: ROUNDS=3 SECS=1 SECS_B=2 NFILES=200 FILE_KIB=256 PARTS="a b c"; PAGECACHE_BENCH_TRACE=1 traces the
# script (set -x). Takes about 2.5 minutes (2 CPUs busy most of it).
set -euo pipefail
[ -n "${PAGECACHE_BENCH_TRACE:-}" ] && set -x

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-1}
SECS_B=${SECS_B:-2}
NFILES=${NFILES:-200}
FILE_KIB=${FILE_KIB:-256}
PARTS=${PARTS:-a b c}

. "$(dirname "$0")/lib.sh"
# A mount namespace of our own: the tracefs mount (if the system has none) and the image mounts go with it.
if [ -z "${PAGECACHE_BENCH_NS:-}" ]; then
        bench_dirs pagecache -- "$@"
        ninja -C "$BUILD" bench/pagecache-bench >/dev/null
        exec env PAGECACHE_BENCH_NS=1 unshare -m --propagation private "$0" "$@"
fi
# The namespace copied every mount of the machine: another suite's scratch image among them would stay
# mounted here after that suite unmounted it (its e2fsck would then find it in use). Detach those (the
# loop devices' mounts) before anything of ours is mounted.
awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 2) ~ "^/dev/loop") print $5; break } }' /proc/self/mountinfo |
        sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done

BENCH_SCRATCH=$(scratch_root) bench_init pagecache mkfs.ext4 losetup jq -- "$@"
bench_binaries bench/pagecache-bench
PCB=${BIN[pagecache-bench]}
tracefs_ready

image() {       # NAME SIZE -> mounts $TMP/mnt-NAME, rotational
        make_ext4_image "$TMP/$1.img" "$2"
        attach "$TMP/$1.img" 1
        do_mount "$ATTACHED" "$TMP/mnt-$1"
}
image a 512M
image b 64M
A=$TMP/mnt-a B=$TMP/mnt-b
mkdir "$A/files" "$A/files2" "$A/w"
"$PCB" create "$A/files" "$NFILES" "$FILE_KIB"
"$PCB" create "$A/files2" "$NFILES" "$FILE_KIB"
sync

start_tracer() {        # LOGFILE ARGS...
        local log=$1
        shift
        "$PCB" trace "$@" 2> "$log" &
        TRACER=$!
        BENCH_PIDS+=("$TRACER")
        for _ in $(seq 50); do grep -q '^tracing' "$log" 2>/dev/null && return; sleep 0.05; done
        die "the tracer did not start: $(cat "$log")"
}
stop_tracer() {         # -> $CONSUMER, its figures (JSON)
        kill "$TRACER"
        wait "$TRACER"
        forget BENCH_PIDS "$TRACER"
        TRACER=
        CONSUMER=$(tail -n 1 "$TMP/t.log")
}

run_workload() {        # WORKLOAD
        case $1 in
        write) "$PCB" work write "$A/w" "$SECS" ;;
        *) "$PCB" work "$1" "$A/files" "$NFILES" "$SECS" ;;
        esac
}

part() { [[ " $PARTS " == *" $1 "* ]]; }

if part a; then
echo "== a. workload cost (rounds $ROUNDS, $SECS s each, $NFILES files of $FILE_KIB KiB, $(nproc) CPUs)"
echo "workload config round pages/s cpu-us/page consumer"
CONFIGS=(off other match)
for round in $(seq "$ROUNDS"); do
        for w in read mmap write; do
                for k in 0 1 2; do
                        c=${CONFIGS[$(( (k + round) % 3 ))]}
                        CONSUMER={}
                        case $c in
                        off) out=$(run_workload "$w") ;;
                        other) start_tracer "$TMP/t.log" "$B"; out=$(run_workload "$w"); stop_tracer ;;
                        match) start_tracer "$TMP/t.log" --poll-percent=25 --interval-ms=1000 "$A"; out=$(run_workload "$w"); stop_tracer ;;
                        esac
                        result_with "$(jq -c --argjson c "$CONSUMER" '. + ($c | with_entries(.key |= "consumer_" + .))' <<< "$out")" \
                                measure a workload "$w" variant "$c" round "$round"
                        printf '%s %s %s %s %.3f %s\n' "$w" "$c" "$round" "$(jv pages_s "$out")" "$(jv cpu_us_page "$out")" \
                                "$(jq -r 'if .events then "events=\(.events),lost=\(.lost),cpu-ms=\(.cpu_ms)" else "-" end' <<< "$CONSUMER")"
                done
        done
done
fi

if part b; then
echo
echo "== b. consumer capacity: two cold readers for $SECS_B s"
# buffer KiB per CPU, drain: every N ms (sleep), or when a CPU's buffer is P% full (poll, at most 1 s apart)
for conf in 128:sleep100 1024:sleep100 1024:sleep1000 4096:sleep1000 128:poll25 1024:poll25 1024:poll50; do
        buf=${conf%%:*} mode=${conf#*:}
        case $mode in
        sleep*) args=(--interval-ms="${mode#sleep}") ;;
        poll*) args=(--interval-ms=1000 --poll-percent="${mode#poll}") ;;
        esac
        start_tracer "$TMP/t.log" --buffer-kib="$buf" "${args[@]}" "$A"
        "$PCB" work read "$A/files" "$NFILES" "$SECS_B" > "$TMP/r1" &
        r1=$!
        "$PCB" work read "$A/files2" "$NFILES" "$SECS_B" > "$TMP/r2"
        wait $r1
        stop_tracer
        result_with "$CONSUMER" measure b variant "$conf" buffer_kib "$buf" wakeup "$mode" \
                reader_pages_s "$(jq -s 'map(.pages_s) | add' "$TMP/r1" "$TMP/r2")"
        echo "  $buf KiB/CPU, $mode: $CONSUMER"
done
fi

if part c && ! command -v perf >/dev/null; then
        echo "== c. skipped: no perf"
elif part c; then
echo
echo "== c. share of the workload's CPU samples in tracing code (perf record -e cpu-clock, 2 s each)"
echo "workload config round samples tracing-share"
# ring-buffer and trace-event functions; not the red-black tree's rb_next, rb_insert_color, rb_erase, ...
TRACING_SYMBOLS='trace_event|trace_buffer|ring_buffer|rb_commit|rb_move_tail|rb_reserve|rb_end_commit|rb_wakeups|rb_time|filter_match_preds|tracing_gen_ctx|buffered_event'
for round in $(seq "$ROUNDS"); do
        for w in read mmap write; do
                for c in off other match; do
                        case $c in
                        other) start_tracer "$TMP/t.log" "$B" ;;
                        match) start_tracer "$TMP/t.log" --poll-percent=25 --interval-ms=1000 "$A" ;;
                        esac
                        case $w in
                        write) cmd=("$PCB" work write "$A/w" 2) ;;
                        *) cmd=("$PCB" work "$w" "$A/files" "$NFILES" 2) ;;
                        esac
                        perf record -q -e cpu-clock -F 10000 -o "$TMP/perf.data" -- "${cmd[@]}" >/dev/null 2>&1
                        [ "$c" = off ] || stop_tracer
                        perf report -i "$TMP/perf.data" --no-children --sort symbol --stdio 2>/dev/null > "$TMP/perf.txt"
                        samples=$(sed -n 's/^# Samples: \([0-9.]*K*\) .*/\1/p' "$TMP/perf.txt" | head -n 1)
                        share=$(grep -E "^ +[0-9.]+%.*\] ($TRACING_SYMBOLS)" "$TMP/perf.txt" |
                                awk '{s += $1} END {printf "%.2f", s}' || true)
                        result measure c workload "$w" variant "$c" round "$round" samples "$samples" share "$share"
                        echo "$w $c $round $samples $share%"
                done
        done
done
fi
result measure run rounds "$ROUNDS" secs "$SECS" secs_b "$SECS_B" nfiles "$NFILES" file_kib "$FILE_KIB" cpus "$(nproc)" parts "$PARTS"
bench_finish
