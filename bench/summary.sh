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
        local v seq_ms b_f_w b_f_t a_b_w a_b_t rel cp r_cp
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

# -------------------------------------------------------------------------------------- checkpoint
# per way: the median over the rounds of the runs counted, its ratio to the first way's and the time it adds
# per file, and the median of its ratios to the first way round by round
summary_checkpoint() {
        echo "$(run nfiles) files a run, $(run rounds) rounds; median over the rounds (runs counted), its ratio to" \
                "$(run ways | cut -d' ' -f1)'s and the time added per file; the median of the ratios round by round:"
        q 'select(.measure == "checkpoint") | [.way, .round, (if .counted then .secs else -1 end)] | @tsv' |
                awk -F'\t' -v ways="$(run ways)" -v n="$(run nfiles)" '
                function med(a, k,   i, j, x) {
                        for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { x = a[j]; a[j] = a[j - 1]; a[j - 1] = x }
                        return k == 0 ? 0 : k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
                }
                { t[$1, $2] = $3; if ($2 + 1 > nr) nr = $2 + 1 }
                END {
                        nw = split(ways, w, " ")
                        for (i = 1; i <= nw; i++) {
                                k = 0; delete v
                                for (r = 0; r < nr; r++) if (t[w[i], r] >= 0) v[++k] = t[w[i], r]
                                m[i] = med(v, k)
                                printf "  %-9s %7.3f s (%d)", w[i], m[i], k
                                if (i > 1 && m[1] > 0) {
                                        k2 = 0; delete x
                                        for (r = 0; r < nr; r++) if (t[w[i], r] >= 0 && t[w[1], r] > 0) x[++k2] = t[w[i], r] / t[w[1], r]
                                        printf "  %.2fx, %+.2f ms a file; round by round %.2fx (%d)", m[i] / m[1], (m[i] - m[1]) * 1000 / n, med(x, k2), k2
                                }
                                printf "\n"
                        }
                }'
}

# ------------------------------------------------------------------------------------ exec-latency
summary_exec_latency() {
        echo "medians over $(run rounds) rounds of $(run runs) execs (us): median p90 p99, and the median's excess over none"
        jq -rs --arg b "$B" 'map(select(.bench == $b and .measure == "exec")) | group_by(.label) | map({label: .[0].label,
                        m: (map(.median_us) | sort | .[length / 2 | floor]),
                        p90: (map(.p90_us) | sort | .[length / 2 | floor]),
                        p99: (map(.p99_us) | sort | .[length / 2 | floor])}) as $g
                | ($g[] | select(.label == "none") | .m) as $none
                | $g[] | "\(.label)\t\(.m)\t\(.p90)\t\(.p99)\t+\(.m - $none)"' "$F" | column -t
}

# -------------------------------------------------------------------------------------- page-flood
summary_page_flood() {
        local n c1 c2 u1 u2 r
        n=$(run n)
        c1=$(q "select(.measure == \"flood\" and .events == $n) | .cpu_s" | median)
        c2=$(q "select(.measure == \"flood\" and .events == 2 * $n) | .cpu_s" | median)
        u1=$(q "select(.measure == \"flood\" and .events == $n) | .us_event" | median)
        u2=$(q "select(.measure == \"flood\" and .events == 2 * $n) | .us_event" | median)
        r=$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", b / a }')
        read -r c1 c2 u1 u2 <<< "$(printf '%.2f ' "$c1" "$c2" "$u1" "$u2")"
        echo "median CPU: $c1 s for $n events, $c2 s for $((2 * n)): ratio $r (linear: 2.00); per event $u1 and $u2 us"
        # the target: the daemon's CPU for the flood linear in its events, 10 % allowed for noise
        echo "$(le "$r" 2.2): CPU time for twice the events $r x (target <= 2.2)"
}

# ---------------------------------------------------------------------------------------- spindisk
summary_spindisk() {
        q 'select(.measure == "disk") | [.variant, .requests, .bytes, .wall_ms, .model_ms, .slept_ms, .slept_requests] | @tsv' |
                awk -F'\t' '{ printf "%-10s %6d requests %8.1f MiB   wall %9.1f ms   model of the trace %9.1f ms   faultfs slept %9.1f ms (%d requests)   wall / model %s\n",
                        $1, $2, $3 / 1048576, $4, $5, $6, $7, ($5 > 0 ? sprintf("%.3f", $4 / $5) : "nan") }'
}

# --------------------------------------------------------------------------------------- pagecache
# medians are the middle value of the sorted runs (the lower one of two)
summary_pagecache() {
        local w c
        if [ -n "$(q 'select(.measure == "a") | 1' | head -n 1)" ]; then
                echo "== a. workload cost (rounds $(run rounds), $(run secs) s each, $(run nfiles) files of $(run file_kib) KiB, $(run cpus) CPUs)"
                echo "workload config  median-pages/s (min-max)      median-cpu-us/page (min-max)  vs off (pages/s, cpu/page)"
                for w in read mmap write; do
                        for c in off other match; do
                                echo "$w $c $(q "select(.measure == \"a\" and .workload == \"$w\" and .variant == \"$c\") | .pages_s" | sort -n | tr '\n' ' ')|" \
                                        "$(q "select(.measure == \"a\" and .workload == \"$w\" and .variant == \"$c\") | .cpu_us_page" | sort -n | tr '\n' ' ')"
                        done | awk '{
                                n = 0; for (i = 3; $i != "|"; i++) pv[++n] = $i; m = 0; for (i++; i <= NF; i++) uv[++m] = $i
                                pmed = pv[int((n + 1) / 2)]; umed = uv[int((m + 1) / 2)]
                                if ($2 == "off") { poff = pmed; uoff = umed }
                                printf "%-8s %-6s %9d (%d-%d)  %22.3f (%.3f-%.3f)   %.3f, %.3f\n", $1, $2, pmed, pv[1], pv[n], umed, uv[1], uv[m], pmed / poff, umed / uoff
                        }'
                done
        fi
        if [ -n "$(q 'select(.measure == "b") | 1' | head -n 1)" ]; then
                echo
                echo "== b. consumer capacity: two cold readers for $(run secs_b) s"
                echo "buffer-KiB/CPU wakeup reader-pages/s events events/s lost consumer-cpu-ms"
                q 'select(.measure == "b") | "\(.buffer_kib) \(.wakeup) \(.reader_pages_s) \(.events) \(.events_s) \(.lost) \(.cpu_ms)"'
        fi
        if [ -n "$(q 'select(.measure == "c") | 1' | head -n 1)" ]; then
                echo
                echo "== c. share of the workload's CPU samples in tracing code (perf record -e cpu-clock, 2 s each)"
                echo "workload config median-share (min-max)"
                for w in read mmap write; do
                        for c in off other match; do
                                q "select(.measure == \"c\" and .workload == \"$w\" and .variant == \"$c\") | .share" | sort -n | tr '\n' ' ' |
                                        awk -v w=$w -v c=$c '{printf "%-8s %-6s %.2f%% (%.2f-%.2f)\n", w, c, $(int((NF + 1) / 2)), $1, $NF}'
                        done
                done
        fi
}

# -------------------------------------------------------------------------------------- layout-app
summary_layout_app() {
        local v vs=() whole=() fmt seq_w seq_t seq_r rs ra rf
        st() { val files "$1" "$2"; }
        rg() { val ranges "$1" "$2"; }
        median_run() { q "select(.measure == \"run-trace\" and .variant == \"$1\" and .run == $(val median-run "$1" run))"; }
        trs() { median_run "$1" | jq -r --arg k "$2" '.[$k] // empty | tostring'; }     # VARIANT KEY of the median run
        part() { val "trace-$2" "$1" "$3"; }
        read -ra vs <<< "$(run variants)"
        read -ra whole <<< "$(run whole_variants)"
        seq_w=$(awk -v b="$(st aged bytes)" -v r="$(run transfer_bps)" 'BEGIN { printf "%.1f", b * 1000 / r }')
        seq_t=$(awk -v b="$(trs aged bytes)" -v r="$(run transfer_bps)" 'BEGIN { printf "%.1f", b * 1000 / r }')
        seq_r=$(awk -v b="$(rg aged bytes)" -v r="$(run transfer_bps)" 'BEGIN { printf "%.1f", b * 1000 / r }')
        echo "================= seekless layout benchmark: $(run title) ================="
        echo "date $(run date); kernel $(run kernel); $(run cpus) CPU(s); load $(run load); seed $(run seed); $(run imgsize) images"
        echo "aged image: $(run freefrag)"
        echo "packages: $(run debs) ($(run deb_mib) MiB of .debs); /$(run app_bin) $(mib "$(run app_size)") MiB, $(run app_frag) extents on the aged image"
        echo "read set: $(run readset_files) files, $(mib "$(run rs_bytes)") MiB whole; read() $(mib "$(run rd_bytes)") MiB from $(run rd_files) files;" \
                "mmap() $(mib "$(run mm_bytes)") MiB mapped; $(run mm_only) files only mapped or exec'd; page cache filled: $(mib "$(run pc_total)") MiB" \
                "($(mib "$(run again_bytes)") MiB of it pages of the read set inserted again after eviction)"
        echo "seekless profile: $(run profile_files) files, $(mib "$(run prof_bytes)") MiB whole, $(mib "$(run hot_bytes)") MiB in its ranges;" \
                "$(run in_rs) of them in the read set; ranges: $(run has_ranges)"
        echo "  read set files not recorded: $(run not_rec); recorded outside the read set: $(run not_rs)"
        echo
        fmt='%-14s %9s %8s %10s %9s %8s %10s %9s %9s %10s %9s\n'
        # shellcheck disable=SC2059
        printf "$fmt" variant "files ext" discont "files ms" "rng ext" discont "ranges ms" requests "trace MiB" "trace ms" "wall ms"
        for v in "${vs[@]}"; do
                # shellcheck disable=SC2059
                printf "$fmt" "$v" "$(st "$v" extents)" "$(st "$v" discontinuities)" "$(f1 "$(st "$v" modeled_ms)")" \
                        "$(rg "$v" extents)" "$(rg "$v" discontinuities)" "$(f1 "$(rg "$v" modeled_ms)")" \
                        "$(trs "$v" requests)" "$(mib "$(trs "$v" bytes)")" "$(f1 "$(trs "$v" modeled_ms)")" "$(trs "$v" wall_ms)"
        done
        [ "$(run has_ranges)" = true ] || printf '%-14s %s\n' "ranges" "n/a until page ranges land (no 'ranges' in seeklessctl show --json)"
        # shellcheck disable=SC2059
        printf "$fmt" "sequential" - - "$seq_w" - - "$seq_r" - "$(mib "$(trs aged bytes)")" "$seq_t" -
        echo "  files: the read set's files whole, first-read order ($(mib "$(st aged bytes)") MiB allocated); ranges: the page ranges the"
        echo "  start brought into the page cache, first-touch order ($(mib "$(rg aged bytes)") MiB); trace: the aged start's block requests"
        echo "  (sequential: those bytes / 150 MB/s)"
        echo
        for v in "${vs[@]}"; do
                echo "trace ms of the $(run runs) run(s), $v: $(q "select(.measure == \"run-trace\" and .variant == \"$v\") | [.run, .modeled_ms] | @tsv" |
                        sort -n | cut -f2 | xargs printf '%.1f\n' | paste -sd ' ')"
        done
        for v in "${vs[@]}"; do
                echo "median trace of $v split, each part costed alone: file data $(part "$v" data requests) requests," \
                        "$(mib "$(part "$v" data bytes)") MiB, $(f1 "$(part "$v" data modeled_ms)") ms; metadata $(part "$v" meta requests)" \
                        "requests, $(mib "$(part "$v" meta bytes)") MiB, $(f1 "$(part "$v" meta modeled_ms)") ms"
        done
        if [ "$(run app)" = python ]; then
                # the target for the Python launch: the whole-range model of seekless ranges within 1.25x the
                # sequential limit of the same page ranges
                for v in "${vs[@]}"; do
                        echo "for information, $v / sequential limit: ranges model $(ratio "$(rg "$v" modeled_ms)" "$seq_r")x, trace" \
                                "$(ratio "$(trs "$v" modeled_ms)" "$seq_t")x"
                done
                if [ "$(run has_ranges)" = true ]; then
                        rs=$(ratio "$(rg ranges modeled_ms)" "$seq_r")
                        echo "VERDICT: seekless ranges model / sequential limit (target <= 1.25): $(f1 "$(rg ranges modeled_ms)") / $seq_r ms = ${rs}x $(le "$rs" 1.25)"
                else
                        echo "VERDICT: seekless ranges model / sequential limit (target <= 1.25): cannot be judged (no ranges)"
                fi
        elif [ "$(run has_ranges)" = true ]; then
                ra=$(ratio "$(trs ranges modeled_ms)" "$(trs aged modeled_ms)") rf=$(ratio "$(trs ranges modeled_ms)" "$(trs fresh modeled_ms)")
                echo "seekless ranges / aged, trace (target <= 0.5): ${ra}x $(le "$ra" 0.5)"
                echo "seekless ranges / fresh copy, trace (target <= 0.8): ${rf}x $(le "$rf" 0.8)"
        else
                echo "targets (seekless ranges <= 0.5x aged and <= 0.8x fresh copy, trace): cannot be judged yet (no ranges)"
        fi
        echo "files only mapped by ld.so or libc (read set: read() / mmap() bytes; page cache: bytes brought in; profile: hot bytes):"
        q 'select(.measure == "mapped") | .line'
        for v in "${whole[@]}"; do
                echo "for information, $v / aged: trace $(ratio "$(trs "$v" modeled_ms)" "$(trs aged modeled_ms)")x, ranges model" \
                        "$(ratio "$(rg "$v" modeled_ms)" "$(rg aged modeled_ms)")x, files model $(ratio "$(st "$v" modeled_ms)" "$(st aged modeled_ms)")x;" \
                        "/ fresh copy: trace $(ratio "$(trs "$v" modeled_ms)" "$(trs fresh modeled_ms)")x, ranges model" \
                        "$(ratio "$(rg "$v" modeled_ms)" "$(rg fresh modeled_ms)")x, files model $(ratio "$(st "$v" modeled_ms)" "$(st fresh modeled_ms)")x"
        done
        echo "daemon's report after optimize (${vs[3]:-none}): $(val report "${vs[3]:-none}" report)"
        echo "largest files by page-cache bytes brought in (MiB in / MiB whole / read() MiB / mmap() MiB):"
        q 'select(.measure == "page-bytes") | [.path, .bytes, .whole, .read_mmap_mib] | @tsv' |
                awk -F'\t' '{ printf "  %-60s %7.1f / %.1f / %s\n", $1, $2 / 1048576, $3 / 1048576, $4 }'
        echo "raw layoutq:"
        q 'select(.measure == "files") | "  \(.variant): \(del(.bench, .measure, .variant) | tojson)"'
        echo "raw layoutq --ranges:"
        q 'select(.measure == "ranges") | "  \(.variant): \(del(.bench, .measure, .variant) | tojson)"'
        echo "raw trace-cost:"
        for v in "${vs[@]}"; do echo "  $v: $(median_run "$v" | jq -c 'del(.bench, .measure, .variant, .run, .wall_ms)')"; done
        echo "==========================================================================================="
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
