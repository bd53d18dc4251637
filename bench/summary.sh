#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The tables and PASS/FAIL verdicts of the benchmarks, from their results: the JSON lines bench/lib.sh's
# `result` writes (one a measurement; "bench" names the benchmark, "measure" what was measured, "variant" the
# configuration it was measured in, "round" or "rep" which repetition). Each bench script ends with it;
# run it again on a results file kept from a run (RESULTS_OUT=, or the path the run printed).
#
#   bench/summary.sh RESULTS.jsonl
#
# One section a benchmark found in the file, in the order they first appear. See bench/README.md.
set -euo pipefail
. "$(dirname "$0")/../tests/lib-core.sh"       # median, ratio, mib

F=${1:?usage: bench/summary.sh RESULTS.jsonl}
[ -r "$F" ] || die "$F: cannot read"
B=

# lines of the current bench: jq FILTER over them (-r, one value a line)
q() { jq -r --arg b "$B" "select(.bench == \$b) | $1" "$F"; }
# val MEASURE VARIANT KEY: KEY of the first line with that measure and variant
val() { jq -r --arg b "$B" --arg m "$1" --arg v "$2" --arg k "$3" \
        'select(.bench == $b and .measure == $m and (.variant // "" | tostring) == $v) | .[$k] // empty | tostring' "$F" | head -n 1; }
run() { val run "" "$1"; }      # a figure of the run as a whole
f1() { awk -v x="$1" 'BEGIN { printf "%.1f", x }'; }
le() { awk -v a="$1" -v t="$2" 'BEGIN { print (a != "-" && a <= t) ? "PASS" : "FAIL" }'; }
ge() { awk -v a="$1" -v t="$2" 'BEGIN { print (a != "-" && a >= t) ? "PASS" : "FAIL" }'; }

# ------------------------------------------------------------------------------------------ layout
summary_layout() {
        local v st trs seq_ms b_f_w b_f_t a_b_w a_b_t rel cp r_cp
        st() { val files "$1" "$2"; }
        trs() { val trace "$1" "$2"; }
        seq_ms=$(awk -v b="$(st aged bytes)" -v r="$(run transfer_bps)" 'BEGIN { printf "%.1f", b * 1000 / r }')
        rel=$(q 'select(.measure == "relocation") | .mibs' | median)
        cp=$(q 'select(.measure == "cp") | .mibs' | median)
        echo "================= seekless layout benchmark ================="
        echo "date $(run date); kernel $(run kernel); $(run cpus) CPU(s); seed $(run seed), $(run nfiles) files of 4-$(run maxkib) KiB"
        echo "profile: $(run profile_files) files (program + files in recorded order), $(run cp_bytes) bytes; $(run imgsize) images"
        echo "loop queue: $(run loop_queue) (defaults, not changed)"
        echo
        printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' variant extents discont "span MiB" "modeled ms" requests "trace ms" "trace MiB" "wall ms"
        for v in aged seekless e4defrag fresh; do
                printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' "$v" "$(st $v extents)" "$(st $v discontinuities)" \
                        "$(mib "$(st $v span)")" "$(f1 "$(st $v modeled_ms)")" "$(trs $v requests)" "$(f1 "$(trs $v modeled_ms)")" \
                        "$(mib "$(trs $v bytes)")" "$(trs $v wall_ms)"
        done
        printf '%-18s %8s %8s %9s %12s %9s %12s %10s %9s\n' "sequential limit" - - - "$seq_ms" - "$seq_ms" - -
        echo
        b_f_w=$(ratio "$(st seekless modeled_ms)" "$(st fresh modeled_ms)")
        b_f_t=$(ratio "$(trs seekless modeled_ms)" "$(trs fresh modeled_ms)")
        a_b_w=$(ratio "$(st aged modeled_ms)" "$(st seekless modeled_ms)")
        a_b_t=$(ratio "$(trs aged modeled_ms)" "$(trs seekless modeled_ms)")
        r_cp=$(ratio "$rel" "$cp")
        echo "seekless / fresh copy, modeled time (target <= 1.25):  whole-file ${b_f_w}x $(le "$b_f_w" 1.25);  trace ${b_f_t}x $(le "$b_f_t" 1.25)"
        echo "aged / seekless, modeled time (target >= 3):           whole-file ${a_b_w}x $(ge "$a_b_w" 3);  trace ${a_b_t}x $(ge "$a_b_t" 3)"
        echo "relocation (median of $(run reps)) $rel MiB/s vs cp (median of $(run reps)) $cp MiB/s: ${r_cp} (target >= 0.40) $(ge "$r_cp" 0.40)"
        echo "  relocation runs: $(q 'select(.measure == "relocation") | .files' | paste -sd ' ') files;" \
                "$(q 'select(.measure == "relocation") | .bytes' | paste -sd ' ') bytes;" \
                "$(q 'select(.measure == "relocation") | .secs' | xargs printf '%.3f\n' | paste -sd ' ') s wall;" \
                "$(q 'select(.measure == "relocation") | .mibs' | xargs printf '%.1f\n' | paste -sd ' ') MiB/s"
        echo "  cp runs: $(run cp_bytes) bytes each; $(q 'select(.measure == "cp") | .secs' | xargs printf '%.3f\n' | paste -sd ' ') s incl. sync;" \
                "$(q 'select(.measure == "cp") | .mibs' | xargs printf '%.1f\n' | paste -sd ' ') MiB/s"
        echo "also: seekless / sequential limit whole-file $(ratio "$(st seekless modeled_ms)" "$seq_ms")x;" \
                "e4defrag / seekless whole-file $(ratio "$(st e4defrag modeled_ms)" "$(st seekless modeled_ms)")x," \
                "trace $(ratio "$(trs e4defrag modeled_ms)" "$(trs seekless modeled_ms)")x; e4defrag took $(printf '%.3f' "$(run e4defrag_secs)") s"
        echo "wall ms: elapsed time of the traced cold run (loop device over a file in /tmp on a VM disk): information only, not the model"
        echo "optimize driven by: $(run optimize_how)"
        q 'select(.measure == "relocation") | "daemon, relocation \(.rep): \(.daemon)"'
        echo "daemon's own report after relocation 1: $(val report seekless report)"
        echo "raw layoutq:"
        q 'select(.measure == "files") | "  \(.variant): \(del(.bench, .measure, .variant) | tojson)"'
        echo "raw trace-cost:"
        q 'select(.measure == "trace") | "  \(.variant): \(del(.bench, .measure, .variant, .wall_ms) | tojson)"'
        echo "============================================================="
}

for B in $(jq -r .bench "$F" | awk '!seen[$0]++'); do
        declare -F "summary_${B//-/_}" >/dev/null || { echo "($B: no summary for this benchmark)"; continue; }
        "summary_${B//-/_}"
done
