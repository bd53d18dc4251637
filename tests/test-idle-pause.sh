#!/bin/bash
# The idle policy pauses a run it started when the machine gets busy, and resumes it once the machine is
# idle again; real conditions, no mocks. The load threshold (MaxLoadPerCPU=) is set 3 per CPU above the
# host's load (at test start and again once the image is aged); once the policy's run has moved some files,
# busy-loop processes (SCHED_IDLE, so they take next to no CPU time from anyone, but they are runnable and
# count in the load average) push the 1-minute load over it. The run must pause with the load as the
# reason and move nothing more while paused; when the hogs are gone and the load has decayed, the same run
# resumes (not a new one), leaves the files it moved before the pause alone, and finishes. What moved is
# checked with filefrag and sha256sum, not the daemon's word; e2fsck -fn at the end. The I/O pressure limit
# is out of reach, so the load is the only reason the machine can count as busy here (a CI machine whose
# own load jumps by more than the margin pauses the run too, but then it resumes later all the same).
# The margin is wide and the hogs many (24 per CPU, more when the load is far below the limit when they
# start) so that the host's own load, which wobbles by a few when other suites run beside, is small beside
# both: with 0.75 per CPU and 8 hogs per CPU, a machine at a load of 11 to 15 on 2 CPUs kept the resumed
# run paused past the test's waits (1 run in 3 under load).
. "$(dirname "$0")/lib.sh"

# One at a time on the machine: another copy's hogs would be load this one cannot tell from the host's,
# and would pause its run before its own hogs start (the lock goes when this script and what it started
# are gone; the wait counts in the timeout).
exec {IDLE_PAUSE_LOCK}>/var/tmp/seekless-idle-pause.lock
t_lock=$SECONDS
flock "$IDLE_PAUSE_LOCK"
[ $((SECONDS - t_lock)) -lt 2 ] || echo "  waited $((SECONDS - t_lock)) s for another idle-pause on this machine"

NCPU=$(nproc)
read -r L1_START L5_START _ < /proc/loadavg
echo "  load at start: $L1_START $L5_START on $NCPU CPUs"

setup_image 1G
start_bus
# Recorder=fanotify: the layout checked here is of whole files, which the tracepoint recorder's profiles of
# these reads are; the BPF recorder's hold the ranges a program used, whose layout optimize-ranges checks
conf() {   # IDLE_SEC [MAX_LOAD_PER_CPU]
        write_config <<EOC
[Record]
Recorder=fanotify
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=1
[Idle]
IdleSec=$1
BootQuietSec=0
MinIntervalHours=1
MaxIOPressure=100
MaxLoadPerCPU=${2:-1000}
EOC
}
idle_status() {
        busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 \
                org.seekless.Seekless1.Manager IdleStatus | sed 's/^s "//; s/"$//'
}
load1() { cut -d' ' -f1 /proc/loadavg; }
# One line per file: its path and its physical extents (filefrag -v), to see which files moved.
extents_of() {
        local f
        for f in "$@"; do
                printf '%s' "$f"
                file_extents "$f" | awk '{ printf " %s+%s", $2, $3 }'
                echo
        done
}
# The lines of two extents_of outputs that differ, for a failure message.
moved_between() { diff "$1" "$2" | grep '^>' | head -n 5; }
# The log since $mark, into $TMP/new.log (grep a file: grep -q on a pipe can fail the pipe under pipefail).
new_log() { tail -n +"$((mark + 1))" "$DAEMON_LOG" > "$TMP/new.log"; }
in_new_log() { new_log; grep -Eq "$1" "$TMP/new.log"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- record a launch profile over ~43 MiB of aged files, with the policy held back (IdleSec=1h) ---
conf 1h
start_daemon --filesystem="$MNT"
wait_until 30 boot_recording_over || fail "boot window did not close"
setup_aged_profile 23 44 1792
mapfile -t order < <(profile_paths "$P")
checksum_all "$TMP/sums"
aged=$(discontinuities_of "${order[@]}")
[ "$aged" -gt 10 ] || fail "the aged image is not aged enough ($aged discontinuities)"
extents_of "${order[@]}" > "$TMP/ext.aged"
echo "  profile: ${#order[@]} files, $(du -cm "${order[@]}" | tail -n1 | cut -f1) MiB, $aged discontinuities"
stop_daemon

# --- the policy starts a run by itself (IdleSec=20s), slowed to 1 MiB/s ---
# IdleSec=20s rather than a second or two: the 1-min load average crosses the limit slowly, and a run that
# resumed the moment it dipped below would likely be paused again by the next wobble. MinIntervalHours=1
# does not hold back the first run (there was none) nor the resume of a paused one, but keeps the policy
# from starting a second run right after this one (which would lay the profile out again in one piece,
# across the seam the pause left) while the layout is checked.
# The load limit: the highest of the 1- and 5-min load averages at the start and the 1-min one now (aging
# the image adds to it), plus 3 per CPU.
read -r L1 _ < /proc/loadavg
MAX_LOAD_PER_CPU=$(awk -v a="$L1_START" -v b="$L5_START" -v c="$L1" -v n="$NCPU" \
        'BEGIN { m = a > b ? a : b; m = m > c ? m : c; printf "%.2f", m / n + 3 }')
LIMIT=$(awk -v m="$MAX_LOAD_PER_CPU" -v n="$NCPU" 'BEGIN { printf "%.1f", m * n }')   # as the daemon prints them
MAX_G=$(awk -v m="$MAX_LOAD_PER_CPU" 'BEGIN { printf "%g", m }')
LOAD_REASON="load [0-9]+\.[0-9] > $LIMIT \(MaxLoadPerCPU=$MAX_G, $NCPU CPUs?\)"
echo "  load now: $L1 -> MaxLoadPerCPU=$MAX_LOAD_PER_CPU (load limit $LIMIT)"
conf 20s "$MAX_LOAD_PER_CPU"
start_daemon --filesystem="$MNT"
started() { grep -q "Idle: started optimization" "$DAEMON_LOG"; }
wait_until 90 started || fail "no optimization started by itself: '$(idle_status)', load $(load1) (limit $LIMIT)"
id=$(grep -o "Idle: started optimization [0-9]*" "$DAEMON_LOG" | awk '{print $4}')
moved_some() { ! extents_of "${order[@]}" | cmp -s - "$TMP/ext.aged"; }
wait_until 30 moved_some || fail "the run moved nothing"
optimizing || fail "the run ended before the machine got busy"
pass "optimization $id started by itself: '$(idle_status)'"

# --- the machine gets busy: the run pauses ---
# The 1-min average climbs by 1 - e^(-t/60) of the hogs' number: with 6.5 times as many hogs as the
# load has to rise to cross the limit, it crosses it in about 10 s, and, after the half-minute they run,
# falls back below it 60 to 80 s after they stop. That rise is 3 per CPU when the host's load has held
# since the limit was set; more when that load was a peak that has fallen since (a limit set at a load of
# 47, falling to 36: 48 hogs would have needed 30 s, and the run ended first).
read -r L1 _ < /proc/loadavg
N_HOGS=$(awk -v lim="$LIMIT" -v l="$L1" -v n="$NCPU" \
        'BEGIN { h = int(6.5 * (lim - l)) + 1; h = h < 24 * n ? 24 * n : h; print (h > 400 ? 400 : h) }')
echo "  load now: $L1, $N_HOGS hogs"
mark=$(wc -l < "$DAEMON_LOG")
t_hogs=$(now)
for ((i = 0; i < N_HOGS; i++)); do
        chrt --idle 0 bash -c 'while :; do :; done' &
        EXTRA_PIDS+=($!)
done
paused() { in_new_log "Idle: pausing the optimization: load "; }
wait_until 120 paused || {
        in_new_log "Optimization $id done" && fail "the run finished before the load rose ($(load1))"
        fail "no pause within 120 s: load $(load1) (limit $LIMIT), '$(idle_status)'"
}
t_paused=$(now)
new_log
line=$(grep -m1 "Idle: pausing the optimization:" "$TMP/new.log")
echo "  ${line#*seeklessd*: }"
echo "$line" | grep -Eq "Idle: pausing the optimization: $LOAD_REASON$" ||
        fail "pause reason: $line"
in_new_log "Idle: pausing the optimization: [^l]" && fail "paused for another reason than the load"
wait_until 15 not_optimizing || fail "the run did not stop"
in_new_log "Run $id on $MNT stopped \(shutdown or the machine got busy\); it resumes later" ||
        fail "no log line for the stopped run"
waiting_load() { idle_status | grep -Eq "^waiting: $LOAD_REASON$"; }
wait_until 15 waiting_load || fail "status while paused: '$(idle_status)'"
ctl --json=short status > "$TMP/status.json"
jq -e '.optimizing == false and .optimization_id == 0 and (.idle | startswith("waiting: load "))' "$TMP/status.json" \
        >/dev/null || fail "status --json while paused: $(jq -c '{optimizing, optimization_id, idle}' "$TMP/status.json")"
ctl status > "$TMP/status.out"
grep -Eq "^ *Idle policy: waiting: load .*MaxLoadPerCPU=" "$TMP/status.out" || fail "status: $(cat "$TMP/status.out")"
in_new_log "Optimization $id (done|cancelled|failed)" && fail "the paused run was reported finished"
pass "paused $(secs "$t_hogs" "$t_paused") s after the hogs started: '$(idle_status)'"

# nothing moves while paused
extents_of "${order[@]}" > "$TMP/ext.paused"
sleep 5
extents_of "${order[@]}" > "$TMP/ext.paused2"
cmp -s "$TMP/ext.paused" "$TMP/ext.paused2" ||
        fail "files moved while the run was paused: $(moved_between "$TMP/ext.paused" "$TMP/ext.paused2")"
not_optimizing || fail "the run went on while the machine was busy (load $(load1))"
# the files moved before the pause: a prefix of the profile, the rest not moved yet
mapfile -t done_before < <(paste "$TMP/ext.aged" "$TMP/ext.paused" |
        awk -F'\t' '$1 != $2 { split($1, f, " "); print f[1] }')
k=${#done_before[@]}
[ "$k" -gt 0 ] && [ "$k" -lt "${#order[@]}" ] || fail "moved before the pause: $k of ${#order[@]} files"
[ "${done_before[*]}" = "${order[*]:0:k}" ] || fail "the files moved before the pause are not the profile's first $k"
pass "nothing moved for 5 s while paused ($k of ${#order[@]} files moved before), load $(load1)"

# --- the machine is idle again: the same run resumes and finishes ---
kill "${EXTRA_PIDS[@]}"
for p in "${EXTRA_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
EXTRA_PIDS=()
t_quiet=$(now)
echo "  hogs stopped at load $(load1)"
resumed() { in_new_log "Idle: resuming the interrupted optimization"; }
wait_until 200 resumed || fail "no resume within 200 s: load $(load1) (limit $LIMIT), '$(idle_status)'"
t_resumed=$(now)
new_log
line=$(grep -m1 "Resuming interrupted run" "$TMP/new.log" || true)
[ -n "$line" ] || fail "no log line for the resumed run"
echo "$line" | grep -Eq "Resuming interrupted run $id on $MNT: [0-9]+ of [0-9]+ files still to do$" ||
        fail "resumed: $line"
echo "  ${line#*seeklessd*: }"
pass "resumed $(secs "$t_quiet" "$t_resumed") s after the hogs stopped (load $(load1))"

# The run goes on to the end. On a machine whose own load hovers near the limit, the run may pause and
# resume again on the way (the mover's I/O adds to the load too): allowed, as long as every pause is for
# the load and is followed by a resume of the same run.
finished() { in_new_log "Optimization $id done: "; }
wait_until 150 finished || fail "the resumed run did not finish: '$(idle_status)'"
wait_until 10 not_optimizing || fail "still optimizing after the run finished"
t_done=$(now)
[ "$(grep -c "Idle: started optimization" "$DAEMON_LOG")" = 1 ] || fail "a new run started instead of resuming"
new_log
grep -q "not moved:" "$TMP/new.log" && fail "files not moved: $(grep "not moved:" "$TMP/new.log")"
pauses=$(grep -c "Idle: pausing the optimization: " "$TMP/new.log")
[ "$(grep -c "Idle: resuming the interrupted optimization" "$TMP/new.log")" = "$pauses" ] ||
        fail "$pauses pauses, not as many resumes"
mapfile -t todo < <(grep -Eo "Resuming interrupted run $id on $MNT: [0-9]+ of ${#order[@]} files still to do$" \
        "$TMP/new.log" | awk '{ print $(NF - 6) }')
[ "${#todo[@]}" = "$pauses" ] || fail "$pauses pauses, ${#todo[@]} resumes of run $id with its ${#order[@]} files"
[ $(( ${#order[@]} - todo[0] )) = "$k" ] ||
        fail "the daemon says $(( ${#order[@]} - todo[0] )) files were done before the pause, filefrag $k"
echo "  $(grep -o "Optimization $id done: .*" "$TMP/new.log") ($pauses pause(s))"

# The files moved before the pause stayed where they were; the rest moved after. Each stretch of files
# moved between a resume and the next pause (or the end) went into a donor of its own: the files of each
# stretch are back to back (the earlier donors on this fresh image in one run, like the last one's), so the
# profile has at most one discontinuity per pause on top of the last donor's runs - 1.
extents_of "${order[@]}" > "$TMP/ext.done"
cmp -s <(head -n "$k" "$TMP/ext.paused") <(head -n "$k" "$TMP/ext.done") ||
        fail "files moved before the pause moved again: $(moved_between <(head -n "$k" "$TMP/ext.paused") \
                <(head -n "$k" "$TMP/ext.done"))"
paste "$TMP/ext.paused" "$TMP/ext.done" | tail -n +"$((k + 1))" | awk -F'\t' '$1 == $2 { bad = 1 } END { exit bad }' ||
        fail "some files of the profile were not moved after the resume"
runs=$(donor_runs_of_last_run)
bounds=(0)
for t in "${todo[@]}"; do bounds+=($(( ${#order[@]} - t ))); done
bounds+=("${#order[@]}")
parts=()
for ((s = 0; s + 1 < ${#bounds[@]}; s++)); do
        from=${bounds[s]} n=$(( bounds[s + 1] - bounds[s] ))
        [ "$n" -gt 0 ] || continue
        d=$(discontinuities_of "${order[@]:from:n}")
        parts+=("$n files: $d")
        if [ $((s + 2)) = "${#bounds[@]}" ]; then
                [ "$d" -le $((runs - 1)) ] || fail "the $n files moved last: $d discontinuities, donor had $runs run(s)"
        else
                [ "$d" = 0 ] || fail "the $n files moved before pause $((s + 1)) are not back to back ($d discontinuities)"
        fi
done
total=$(discontinuities_of "${order[@]}")
echo "  discontinuities: $aged aged -> $total over ${#order[@]} files; per stretch: $(printf '%s; ' "${parts[@]}")(last" \
        "donor in $runs run(s))"
[ "$total" -le $((pauses + runs - 1)) ] || fail "$total discontinuities over the profile after $pauses pause(s)"
pass "profile in order: each stretch back to back, $aged -> $total discontinuities"

verify_checksums "$TMP/sums"
pass "every file on the image has its old checksum"
[ "$(grep -c "Idle: started optimization" "$DAEMON_LOG")" = 1 ] || fail "another run started during the checks"
stop_daemon
fsck_clean
pass "e2fsck -fn clean"
echo "  timings: pause $(secs "$t_hogs" "$t_paused") s after the hogs started, resume $(secs "$t_quiet" "$t_resumed") s" \
        "after they stopped, done $(secs "$t_resumed" "$t_done") s after the resume"
echo "  total: $SECONDS s"
