#!/bin/bash
# Runs integration tests again and again while the machine is loaded, and counts their failures.
#   usage: tests/flake-hunt.sh [-C BUILD_DIR] [-o OUT_DIR] [--no-load] TEST... RUNS
#          tests/flake-hunt.sh [-C BUILD_DIR] [-o OUT_DIR] [--no-load] --all RUNS   (the integration suite)
#          tests/flake-hunt.sh --table OUT_DIR...        (the table of runs done or going on, taken together)
# Builds BUILD_DIR (default: build) once, starts a CPU and I/O load (tests/load.sh: a busy loop per CPU; a
# buffered writer with a sync at its end, a writer of synced 4 KiB blocks and an O_DIRECT reader, on a
# scratch file on the disk below /var/tmp) and lets it settle for LOAD_SETTLE seconds (default 30), then
# runs the tests in rounds, each test once per round (a flake shows early, and each test meets the load
# at every stage of the run), each alone in `meson test` with the timeout it declares. Every run is a
# line of OUT_DIR/runs.tsv (default OUT_DIR: BUILD_DIR/flake-hunt-DATE); a failing run's output is kept
# as OUT_DIR/TEST.RUN.log (with the daemon's log, which the tests print when they fail). At the end,
# the table: test, runs, failures, the slowest run and the test's timeout, the first failure's message.
# Killed (SIGINT, SIGTERM, SIGHUP), it stops the test running and the load, removes its scratch
# directory and prints the table so far; killed with SIGKILL, the scratch guardian (tests/scratch.sh)
# stops the load and removes the scratch directory, and the test running goes on to its end.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/tests/scratch.sh"
. "$SRC/tests/load.sh"

usage() { sed -n '3,5s/^# \{0,1\}//p' "$0" >&2; exit 2; }

# The markdown table of OUT_DIR/runs.tsv of each OUT_DIR (test, round, result, duration, timeout, message;
# tab-separated), the rounds of several counted together.
table() {       # OUT_DIR...
        echo "| test | runs | failures | slowest (s) | timeout (s) | first failure |"
        echo "|---|---:|---:|---:|---:|---|"
        awk -F'\t' '
                !($1 in runs) { order[n++] = $1 }
                { runs[$1]++; to[$1] = $5; if ($4 > max[$1]) max[$1] = $4 }
                $3 != "OK" && $3 != "SKIP" { bad[$1]++; if (!($1 in msg)) msg[$1] = "run " $2 ": " $6 }
                $3 == "SKIP" { skip[$1]++ }
                END {
                        for (i = 0; i < n; i++) {
                                t = order[i]
                                m = msg[t]; gsub(/\|/, "\\|", m)
                                printf "| %s | %d%s | %d | %.1f | %s | %s |\n", t, runs[t],
                                        skip[t] ? " (" skip[t] " skipped)" : "", bad[t], max[t], to[t], m
                        }
                }' "${@/%//runs.tsv}"
}

# One run of TEST in `meson test`, its line in runs.tsv and on stdout; its output kept if it failed.
run_one() {     # TEST ROUND
        local t=$1 r=$2 log=$OUT/$1.$2.log rc=0 res result dur code msg=
        rm -f "$B/meson-logs/$LOGBASE.json"
        meson test -C "$B" --no-rebuild --verbose --logbase "$LOGBASE" --suite integration "$t" \
                > "$log" 2>&1 < /dev/null &
        MESON_PID=$!
        wait "$MESON_PID" || rc=$?
        MESON_PID=
        res=$(jq -rs 'last | "\(.result)\t\(.duration)\t\(.returncode)"' "$B/meson-logs/$LOGBASE.json" \
                2>/dev/null) || res="ERROR	0	$rc"
        IFS=$'\t' read -r result dur code <<< "$res"
        if [ "$result" != OK ] && [ "$result" != SKIP ]; then
                msg=$(grep -m1 -E '^FAIL: ' "$log" || true)
                msg=${msg:-$result (exit status $code)}
        else
                rm -f "$log"
        fi
        printf '%s\t%s\t%s\t%.1f\t%s\t%s\n' "$t" "$r" "$result" "$dur" "${TIMEOUT[$t]}" "$msg" \
                >> "$OUT/runs.tsv"
        printf 'round %d/%d  %-20s %-8s %6.1f s  %s\n' "$r" "$RUNS" "$t" "$result" "$dur" \
                "${msg:+$msg ($log)}"
}

cleanup() {
        local rc=$?
        set +e
        trap - EXIT INT TERM HUP
        if [ -n "$MESON_PID" ]; then
                kill -TERM "$MESON_PID" 2>/dev/null     # meson stops its test and exits
                pid_gone_within 30 "$MESON_PID"
        fi
        load_stop || true
        rm -rf "$WORK" "$B/meson-logs/$LOGBASE".*
        if [ -s "$OUT/runs.tsv" ]; then
                echo
                echo "$(date +%F) at $COMMIT, $(nproc) CPUs, $LOAD:"
                table "$OUT" | tee "$OUT/table.md"
        fi
        exit "$rc"
}

# All of it in functions, read whole before it runs: a long hunt goes on unchanged when this file is
# edited meanwhile (bash reads a script as it goes).
main() {
        local k t r known=()

        B=$SRC/build OUT= LOAD=loaded ALL=
        while [ $# -gt 0 ]; do
                case $1 in
                -C) B=$2; shift 2 ;;
                -o) OUT=$2; shift 2 ;;
                --no-load) LOAD="no load"; shift ;;
                --all) ALL=1; shift ;;
                --table) [ $# -ge 2 ] || usage; shift; table "$@"; exit 0 ;;
                -h|--help) usage ;;
                -*) usage ;;
                *) break ;;
                esac
        done
        [ $# -ge 1 ] || usage
        RUNS=${*: -1}
        set -- "${@:1:$#-1}"
        [[ $RUNS =~ ^[1-9][0-9]*$ ]] || usage
        if [ -n "$ALL" ]; then
                [ $# = 0 ] || usage
        else
                [ $# -ge 1 ] || usage
        fi
        if [ "$(id -u)" != 0 ]; then
                echo "flake-hunt: the integration tests need root" >&2
                exit 1
        fi

        # a fresh clone has no build yet: configured as run-all.sh configures it
        [ -f "$B/build.ninja" ] || meson setup "$B" --werror >/dev/null
        ninja -C "$B" >/dev/null
        B=$(cd "$B" && pwd)
        # name and declared timeout of each test of the integration suite
        mapfile -t known < <(meson introspect --tests "$B" |
                jq -r '.[] | select(.suite | index("seekless:integration")) | "\(.name)\t\(.timeout)"')
        declare -gA TIMEOUT=()
        for k in "${known[@]}"; do TIMEOUT[${k%%$'\t'*}]=${k#*$'\t'}; done
        TESTS=("$@")
        if [ -n "$ALL" ]; then
                for k in "${known[@]}"; do TESTS+=("${k%%$'\t'*}"); done
        fi
        for t in "${TESTS[@]}"; do
                [ -n "${TIMEOUT[$t]:-}" ] || { echo "flake-hunt: no integration test '$t'" >&2; exit 2; }
        done

        OUT=${OUT:-$B/flake-hunt-$(date +%Y%m%d-%H%M%S)}
        mkdir -p "$OUT"
        : > "$OUT/runs.tsv"
        COMMIT=$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)
        echo "flake-hunt: ${#TESTS[@]} test(s) x $RUNS at $COMMIT, $LOAD; results in $OUT"

        # The load's scratch directory goes on a disk (/var/tmp), not in scratch_root's tmpfs: its I/O must
        # reach a device.
        WORK=$(mktemp -d /var/tmp/seekless-flake-hunt.XXXXXX)
        scratch_claim "$WORK"
        scratch_guard "$WORK"
        MESON_PID=
        LOGBASE=flake-hunt-$$   # meson's log of the last run; another hunt may use the same build directory
        trap cleanup EXIT
        trap 'exit 130' INT TERM HUP

        if [ "$LOAD" = loaded ]; then
                load_start "$WORK"
                sleep "${LOAD_SETTLE:-30}"
                echo "flake-hunt: load started ($(nproc) busy loops, 3 I/O loops in $WORK):" \
                        "$(cut -d' ' -f1-3 /proc/loadavg)"
        fi
        for ((r = 1; r <= RUNS; r++)); do
                for t in "${TESTS[@]}"; do
                        run_one "$t" "$r"
                done
        done
}
main "$@"
