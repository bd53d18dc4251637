#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's CPU time for a user's page flood, for N and 2N page events side by side: does a page event
# cost the same however many came before (ratio 2.0), as it must for the main loop to keep up? Each run is
# tests/test-page-flood.sh (an unprivileged program reads FLOOD_PAGES pages of a sparse file, 32 pages
# apart and backwards: each page a new range at the front of the file's page set until its cap, the worst
# order for it), which prints the daemon's CPU time for the flood, its peak RSS and the slowest
# `seeklessctl status` during it. See bench/README.md.
#
#   sudo bench/page-flood.sh [BUILD_DIR]       (default: build/; ROUNDS=3 N=550000: 1.5-3 minutes)
#
# Runs alternate N and 2N, ROUNDS of each; prints each run, the ratio of the medians (CPU time and
# microseconds per event) and PASS/FAIL for the target: at most 2.2 x the CPU time for twice the events.
# (Every status poll within 1 s is the test's own assertion: a run that misses it reports no figures.)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
N=${N:-550000}
. "$(dirname "$0")/lib.sh"
bench_init page-flood ninja meson jq -- "$@"
ninja -C "$BUILD" >/dev/null

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); N=$N, ROUNDS=$ROUNDS; $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')"
for ((r = 1; r <= ROUNDS; r++)); do
        for n in "$N" $((2 * N)); do
                # the test refuses fewer than 2^20 events: only its report line is wanted here
                out=$(FLOOD_PAGES=$n meson test -C "$BUILD" --no-rebuild --verbose page-flood 2>&1 || true)
                line=$(grep -m1 "^  daemon: " <<<"$out" || true)
                slow=$(grep -m1 -o "the slowest [0-9]* ms" <<<"$out" || echo "the slowest ? ms (failed before it)")
                [ -n "$line" ] || { echo "ERROR: no report from the run with $n pages:"; tail -20 <<<"$out"; exit 1; }
                result measure flood variant "$n" round "$r" events "$n" \
                        cpu_s "$(sed -E 's/.* ([0-9.]+) s of CPU.*/\1/' <<<"$line")" \
                        us_event "$(sed -E 's/.*\(([0-9.]+) us an event\).*/\1/' <<<"$line")"
                echo "round $r, $n pages:${line#  daemon:}; $slow"
        done
done
result measure run n "$N" rounds "$ROUNDS"
bench_finish
