#!/bin/bash
# Builds the fuzz targets with clang (libFuzzer, ASan, UBSan) in a build directory of their own and runs
# each for a while (README.md here). A crash, a leak, an UB report or a failed check stops that target:
# the input is left in BUILD_DIR/fuzz-artifacts/ and the script fails at the end. What a run found is
# kept in BUILD_DIR/fuzz-corpus/TARGET (the committed seeds are read, never written).
#   usage: fuzz/run.sh [-t SECONDS] [-j PARALLEL] [BUILD_DIR] [TARGET...]
#     -t  seconds per target (default 20; CI's short run); -j  targets run at once (default 1)
#     BUILD_DIR  default build-fuzz; TARGET  default all: conf boot-record db fanotify bus
set -euo pipefail
cd "$(dirname "$0")/.."
T=20 J=1
while getopts t:j: o; do
        case $o in
        t) T=$OPTARG ;;
        j) J=$OPTARG ;;
        *) exit 2 ;;
        esac
done
shift $((OPTIND - 1))
B=${1:-build-fuzz}
[ $# -gt 0 ] && shift
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(conf boot-record db fanotify bus)

# per target: the longest input, and what else it needs
declare -A MAX_LEN=([conf]=16384 [boot-record]=8192 [db]=65536 [fanotify]=8192 [bus]=4096)

start=$(date +%s)
if [ ! -d "$B" ]; then
        CC=clang meson setup "$B" -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false \
                -Dman=disabled >/dev/null
fi
ninja -C "$B" "${TARGETS[@]/#/fuzz/fuzz-}"
built=$(date +%s)

# the targets' files (configurations, databases, records) go to a scratch directory in memory when there is
# one (tests/scratch.sh: /dev/shm), removed at the end or, if this script is killed, by its guardian
. tests/scratch.sh
SCRATCH=$(mktemp -d "$(scratch_root)/seekless-fuzz.XXXXXX")
scratch_claim "$SCRATCH"
scratch_guard "$SCRATCH"
trap 'rm -rf "$SCRATCH"' EXIT
export TMPDIR=$SCRATCH
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

run_one() {    # TARGET: the fuzzer's output goes to BUILD_DIR/fuzz-logs/TARGET.log
        local t=$1 c=$B/fuzz-corpus/$1 dict=() seeds=()
        mkdir -p "$c" "$B/fuzz-artifacts" "$B/fuzz-logs"
        [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
        for d in fuzz/corpus/$t fuzz/regressions/$t; do [ -d "$d" ] && seeds+=("$d"); done
        # libFuzzer writes what it finds into the first directory only: the build directory's
        "$B/fuzz/fuzz-$t" -max_total_time="$T" -timeout=10 -rss_limit_mb=2048 -max_len="${MAX_LEN[$t]}" \
                -print_final_stats=1 -artifact_prefix="$B/fuzz-artifacts/$t-" \
                "${dict[@]}" "$c" "${seeds[@]}" > "$B/fuzz-logs/$t.log" 2>&1
}

# "cov: N ft: N corp: N/SIZE, N runs, N/s" from a libFuzzer log
summary() {
        local last execs rate
        last=$(grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*" "$1" | tail -n1)
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$1")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$1")
        echo "$last, $execs runs, $rate/s"
}

rc=0
pids=() names=()
running() {     # how many of the targets started are still running
        local n=0 p
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
        echo "$n"
}
for t in "${TARGETS[@]}"; do
        while [ "$(running)" -ge "$J" ]; do sleep 1; done
        echo "fuzz-$t: ${T}s"
        run_one "$t" &
        pids+=($!) names+=("$t")
done
for i in "${!pids[@]}"; do
        t=${names[$i]}
        if wait "${pids[$i]}"; then
                echo "fuzz-$t: ok ($(summary "$B/fuzz-logs/$t.log"))"
        else
                rc=1
                echo "fuzz-$t: FAILED, its log ($B/fuzz-logs/$t.log) ends:"
                tail -n 60 "$B/fuzz-logs/$t.log"
                echo "the input: $(ls -t "$B/fuzz-artifacts/$t-"* 2>/dev/null | head -n1)"
                echo "fix the daemon, then commit the input to fuzz/regressions/$t/ (the unit suite replays it)"
        fi
done
echo "fuzz: build $((built - start)) s, runs $(( $(date +%s) - built )) s"
exit "$rc"
