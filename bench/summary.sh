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

# ------------------------------------------------------------------------------------------ record
slowdown() { awk -v x="$1" 'BEGIN { printf "%.1f", (1 - x) * 100 }'; }
verdict() { awk -v s="$(slowdown "$1")" -v t="$2" 'BEGIN { print (s <= t) ? "PASS" : "FAIL" }'; }
# per-round values of KEY, in round order: PART MODE CONFIG KEY
rounds() { q "select(.measure == \"$1\" and .mode == \"$2\" and .variant == \"$3\") | [.round, .$4] | @tsv" |
        sort -n | cut -f2- | paste -sd ' '; }
# the throughput table of PART and MODE: the rounds, the medians, ratios and verdicts
record_part() {     # PART MODE
        local p=$1 m=$2 c r nr med=() rat paired=()
        local -A n=()
        nr=$(run rounds)
        printf '%-8s' round; for c in none idle window; do printf '%12s' "$c"; done; printf '%12s%12s\n' idle/none window/none
        for ((r = 1; r <= nr; r++)); do
                printf '%-8s' "$r"
                for c in none idle window; do
                        n[$c]=$(q "select(.measure == \"$p\" and .mode == \"$m\" and .variant == \"$c\" and .round == $r) | .ops_s")
                        printf '%12s' "${n[$c]}"
                done
                awk -v i="${n[idle]}" -v w="${n[window]}" -v n="${n[none]}" 'BEGIN { printf "%12.3f%12.3f\n", i / n, w / n }'
        done
        for c in none idle window; do
                med+=("$(q "select(.measure == \"$p\" and .mode == \"$m\" and .variant == \"$c\") | .ops_s" | median)")
        done
        printf '%-8s' median; printf '%12s' "${med[@]}"
        for c in 1 2; do
                rat[c]=$(awk -v a="${med[c]}" -v b="${med[0]}" 'BEGIN { printf "%.4f", a / b }')
                paired[c]=$(jq -rs --arg b "$B" --arg p "$p" --arg m "$m" --arg c "$([ $c = 1 ] && echo idle || echo window)" '
                        map(select(.bench == $b and .measure == $p and .mode == $m)) as $l
                        | $l[] | select(.variant == $c) | . as $x
                        | ($l[] | select(.variant == "none" and .round == $x.round) | $x.ops_s / .ops_s)' "$F" | median)
        done
        printf '%12s%12s\n' "${rat[1]}" "${rat[2]}"
        printf '  %-34s ratio %s (slowdown %5s%%; median of per-round ratios %.4f)  target <= 2%%   %s\n' \
                "daemon idle vs no daemon:" "${rat[1]}" "$(slowdown "${rat[1]}")" "${paired[1]}" "$(verdict "${rat[1]}" 2)"
        printf '  %-34s ratio %s (slowdown %5s%%; median of per-round ratios %.4f)  target <= 30%%  %s\n' \
                "daemon in window vs no daemon:" "${rat[2]}" "$(slowdown "${rat[2]}")" "${paired[2]}" "$(verdict "${rat[2]}" 30)"
}
kib_mib() { mib $(( $1 * 1024 )); }
le20() { awk -v a="$1" 'BEGIN { print (a <= 20 * 1024) ? "PASS" : "FAIL" }'; }

summary_record() {
        local m b n prev later d
        echo "================ seekless recorder benchmark ================"
        echo "date $(run date); kernel $(run kernel); $(run cpus) CPU(s); $(run nfiles) files, $(run secs)s x $(run rounds) rounds"
        echo
        if [ -n "$(q 'select(.measure == "a1") | 1' | head -n 1)" ]; then
                echo "(a1) REPEATED READS, hot cache: ops/s, one process, $(run secs)s after a warm-up pass over the $(run nfiles) files"
                for m in read mmap; do
                        echo
                        echo " mode $m ($([ "$m" = read ] && echo 'open, read to EOF, close' || echo 'open, fstat, mmap, close, touch every page, munmap'))"
                        record_part a1 "$m"
                        echo "  window daemon per round: fanotify events received $(rounds a1 $m window events); overflows $(rounds a1 $m window overflows);"
                        echo "    page-cache events lost $(rounds a1 $m window pages_lost); page ranges stored $(rounds a1 $m window ranges);" \
                                "files in the stored session $(rounds a1 $m window files);"
                        echo "    CPU ticks (utime+stime, 1/$(run clk_tck) s) $(rounds a1 $m window cpu_ticks); VmRSS KiB $(rounds a1 $m window rss_kib)"
                        echo "  idle daemon per round: events received $(rounds a1 $m idle events); CPU ticks $(rounds a1 $m idle cpu_ticks); VmRSS KiB $(rounds a1 $m idle rss_kib)"
                        echo "  pages of tput/ resident before each measurement (none, idle, window):" \
                                "$(rounds a1 $m none resident) / $(rounds a1 $m idle resident) / $(rounds a1 $m window resident)"
                done
                echo "  (hot: no page is inserted, so no page-cache events are expected; in a window the warm-up pass is each file's"
                echo "  first read, and reads before the daemon's ignore marks are placed still raise fanotify events)"
                echo
        fi
        if [ -n "$(q 'select(.measure == "h") | 1' | head -n 1)" ]; then
                echo "(h) THE EXEC PERMISSION MARK ALONE (what an idle seeklessd holds on each watched filesystem; no daemon running):"
                echo "  the (a1) read loop in alternating $(run hook_slice)s slices, $(run hook_cycles) cycles, one process; ratio marked/unmarked:"
                echo "  $(val h "" line)"
                echo "  slowdown $(slowdown "$(val h "" median)")% by the median: the kernel's part of the idle daemon's cost, whatever the daemon does"
                echo
        fi
        if [ -n "$(q 'select(.measure == "a2") | 1' | head -n 1)" ]; then
                echo "(a2) FIRST READS, cold (each file's pages dropped with POSIX_FADV_DONTNEED before the pass, before any daemon"
                echo "     started; each file read once, none read before in that window): ops/s of ONE pass over $(run nfirst) files"
                for m in read mmap; do
                        echo
                        echo " mode $m"
                        record_part a2 "$m"
                        echo "  window daemon per round: fanotify events received $(rounds a2 $m window events); overflows $(rounds a2 $m window overflows);"
                        echo "    page-cache events lost $(rounds a2 $m window pages_lost); page ranges stored $(rounds a2 $m window ranges) (one page per file:"
                        echo "    expected $(run nfirst) each); files in the stored session $(rounds a2 $m window files); CPU ticks (incl. start-up) $(rounds a2 $m window cpu_ticks)"
                        echo "  idle daemon per round: events received $(rounds a2 $m idle events)"
                        echo "  pages still resident after the drop (none, idle, window): $(rounds a2 $m none resident) / $(rounds a2 $m idle resident) / $(rounds a2 $m window resident)"
                done
                echo "  dirs per round: $(q 'select(.measure == "a2") | [.round, "\(.mode):\(.variant):\(.dir)"] | @tsv' |
                        awk -F'\t' '{ d[$1] = d[$1] (d[$1] == "" ? "" : " ") $2 } END { for (r = 1; r in d; r++) printf "%s; ", d[r] }')"
                echo
        fi
        if [ -n "$(q 'select(.measure == "b") | 1' | head -n 1)" ]; then
                b() { val b "" "$1"; }
                echo "(b) daemon memory, one boot window recording $(b files) distinct files"
                echo "  at start:                     VmRSS $(kib_mib "$(b start_kib)") MiB"
                echo "  window open, files read:      VmRSS $(kib_mib "$(b during_kib)") MiB, VmHWM $(kib_mib "$(b hwm_during_kib)") MiB (events $(b events), overflows $(b overflows))"
                echo "    largest resident mappings then (resident/size): $(b maps)"
                echo "  after the session was stored: VmRSS $(kib_mib "$(b after_kib)") MiB, VmHWM $(kib_mib "$(b hwm_after_kib)") MiB (profile files: $(b profile_files); stored $(b stored_after_secs)s after the window closed; DB $(b db_bytes) B)"
                echo "  page-cache events lost $(b pages_lost); page ranges of the stored boot session $(b ranges), metadata ranges $(b meta_ranges) (files read cold:"
                echo "  $(b resident) pages resident after the drop); stored session complete: $(b complete)"
                echo "  highest sampled VmRSS (50 ms sampling): $(kib_mib "$(b peak_kib)") MiB at $(printf '%.2f' "$(b peak_secs)") s after start" \
                        "(window of $(b window_secs) s; BootRecording seen false at $(printf '%.2f' "$(b closed_secs)") s)"
                echo "  target 20 MiB: RSS while recording (VmHWM, window open) $(le20 "$(b hwm_during_kib)");" \
                        "RSS after recording $(le20 "$(b after_kib)"); peak incl. storing (VmHWM) $(le20 "$(b hwm_after_kib)")"
                echo
        fi
        if [ -n "$(q 'select(.measure == "c") | 1' | head -n 1)" ]; then
                n=$(run nboot)
                echo "(c) database growth per recorded boot of $n files read cold, with their page ranges (after wal_checkpoint(TRUNCATE))"
                prev=0
                while IFS=$'\t' read -r b size pages files; do
                        printf '  boot %d: %10s B total  %+10d B  (%s; profile files %s)\n' "$b" "$size" $(( size - prev )) "$pages" "$files"
                        prev=$size
                done < <(q 'select(.measure == "c") | [.boot, .bytes, .pages, .files] | @tsv' | sort -n)
                mapfile -t d < <(q 'select(.measure == "c") | [.boot, .bytes] | @tsv' | sort -n | cut -f2)
                if [ "${#d[@]}" -ge 2 ]; then
                        later=$(awk -v a="${d[0]}" -v b="${d[-1]}" -v n=$(( ${#d[@]} - 1 )) 'BEGIN { printf "%.0f", (b - a) / n }')
                        echo "  first boot (incl. empty schema): ${d[0]} B ($(awk -v s="${d[0]}" -v n="$n" 'BEGIN { printf "%.0f", s / n }') B/file);" \
                                "later boots: $later B/boot ($(awk -v s="$later" -v n="$n" 'BEGIN { printf "%.1f", s / n }') B/file)"
                fi
                echo "  space by table/index after ${#d[@]} boots (dbstat):"
                q 'select(.measure == "c-tables") | .tables' | sed 's/^/    /'
        fi
        echo "============================================================="
}

for B in $(jq -r .bench "$F" | awk '!seen[$0]++'); do
        declare -F "summary_${B//-/_}" >/dev/null || { echo "($B: no summary for this benchmark)"; continue; }
        "summary_${B//-/_}"
done
