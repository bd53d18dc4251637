#!/bin/bash
# The full test suite, as CI runs it: install build/test dependencies, build with warnings as errors, run
# every suite (unit + integration against real fanotify, ext4 on loop devices, SQLite and a private
# dbus-daemon; needs root), then build again with AddressSanitizer/UBSan (leak detection on) and run the
# unit and integration suites again against the sanitized daemon and tools. The integration tests record
# with the tracepoint recorder in the first run and with BPF (the default where it loads) in the second,
# wherever a test names no recorder itself; last, the fuzz targets built
# with clang run 20 s each (fuzz/run.sh, two at a time).
# Before and after, removes what an earlier killed run of this suite left behind (tests/scratch.sh); at
# the end, prints the ten slowest tests with their timeouts (tests/README.md keeps the measured figures).
#   usage: tests/run-all.sh [BUILD_DIR]     (default: build-ci)
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/deps.sh
. tests/scratch.sh
install_deps

B=${1:-build-ci}
A=$B-asan
F=$B-fuzz
scratch_reap
trap scratch_reap EXIT

setup() {      # DIR [meson options]
        local d=$1
        shift
        if [ -d "$d" ]; then
                meson setup --reconfigure "$d" --werror "$@" >/dev/null
        else
                meson setup "$d" --werror "$@" >/dev/null
        fi
}

# The ten slowest tests of the logs in RAN ("BUILD_DIR LOG_FILE" each), with the timeout each declares
# (meson's 30 s default if none).
slowest() {
        local d log
        {
                for run in "${RAN[@]}"; do
                        read -r d log <<< "$run"
                        meson introspect --tests "$d" | jq -r --arg d "$d" \
                                '.[] | "T\t\($d)\t\(.suite[0] | sub("^seekless:"; ""))\t\(.name)\t\(.timeout)"'
                        jq -r --arg d "$d" '"D\t\($d)\t\(.name | sub("^seekless:"; "") | sub("\\+[^ ]*"; ""))\t\(.duration)\t\(.result)"' "$log"
                done
        } | awk -F'\t' '
                $1 == "T" { lim[$2 "\t" $3 " / " $4] = ($5 > 0 ? $5 : 30); next }
                { printf "%8.1f s  %5s s  %-8s %s%s\n", $4, lim[$2 "\t" $3], $5, $3, ($2 ~ /-asan$/ ? " (asan)" : "") }' |
                sort -rn | awk 'NR <= 10'     # reads to the end: head would leave sort to die of SIGPIPE
}

rc=0
RAN=("$B $B/meson-logs/testlog.json")
setup "$B" -Dman=enabled
ninja -C "$B"
SEEKLESS_TEST_RECORDER=fanotify meson test -C "$B" --print-errorlogs --num-processes 1 || rc=$?

if [ "$rc" = 0 ]; then
        setup "$A" -Db_sanitize=address,undefined -Db_lundef=false
        ninja -C "$A"
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
        RAN+=("$A $A/meson-logs/testlog.json")
        # the unit and integration tests against the sanitized daemon and tools: a misaligned read, an
        # overflow or a leak ends the process (abort_on_error, halt_on_error) and fails the test. Not the
        # idle policy's waiting tests (suite idle-wait: minutes of clock, the same code as idle-run), nor
        # the test that times answers against a plan (suite latency), nor the safety campaigns (suite
        # campaign: they check data, not memory). The integration tests record with the BPF recorder here
        # wherever a test names no recorder (lib.sh): the run above recorded with the tracepoint, so every
        # recording test runs against both recorders.
        SEEKLESS_TEST_RECORDER=bpf meson test -C "$A" --suite unit --suite integration --no-suite idle-wait \
                --no-suite latency --no-suite campaign --print-errorlogs --num-processes 1 || rc=$?
fi

# A short run of every fuzz target (libFuzzer, ASan, UBSan; its own clang build): a crash, a leak or an
# UB report fails the run and leaves the input in $F/fuzz-artifacts/.
if [ "$rc" = 0 ]; then
        fuzz_start=$(date +%s)
        fuzz/run.sh -t 20 -j 2 "$F" || rc=$?
        echo "fuzz: $(( $(date +%s) - fuzz_start )) s in all"
fi

echo
echo "The ten slowest tests (duration, timeout, result):"
slowest
echo
# One closing line over all the runs, counted from meson's own JSON logs.
logs=()
for run in "${RAN[@]}"; do logs+=("${run#* }"); done
jq -rs '(map(select(.result == "OK")) | length) as $ok
        | (map(select(.result == "SKIP")) | length) as $skip
        | (length - $ok - $skip) as $bad
        | "\($ok) passed, \($bad) failed, \($skip) skipped"' "${logs[@]}"
exit "$rc"
