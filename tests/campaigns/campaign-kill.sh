#!/bin/bash
# Safety campaign 2 (issue 21): kill -9 at random moments. RUNS runs (default 5: the CI version; by hand
# RUNS=50 or more), modes in turn:
#   plain   kill seeklessd once during a run (RateLimitMiBps= slows it), restart, the run resumes when idle
#   resume  kill it during the run, restart, kill it again during the resumed run, restart, finish
#   room    as plain, on an image whose low block groups are cut up so that MakeRoom= first moves other
#           files out of a window for the donor: the kill often lands in that evacuation
#   early   a running program is skipped and queued by a run; `seeklessd --early-pass` is killed during its
#           pass, then run again to the end
# Each run restores a saved aged image and database (one per kind and seed, PER_IMAGE cycles each) on which
# an uninterrupted reference run was measured, then checks, independently of the daemon's word:
#   sha256 of every file (right after the kill and at the end), e2fsck -fn and no orphan list after
#   unmount, blocks accounted (used - blocks of every reachable inode: unchanged, after a remount), the
#   run's checkpoints (no run left 'running', no file left pending, files checkpointed done before the kill
#   keep their FIEMAP extents through the resume, the resume's "N of M files still to do" equals the
#   pending rows at the kill), and the profile's discontinuities (filefrag) at most the reference's plus
#   one per interruption that split the run between two donors, plus the resumed donor's runs - 1.
# FAULT=corrupt (a byte of a file changed after the run), FAULT=skip-restart (the daemon is not restarted
# after the kill) or FAULT=leak (a file's directory entry removed with debugfs: its blocks belong to no
# reachable inode, like a leaked donor) must make it fail. Knobs: RUNS SEED RATE (MiB/s) PER_IMAGE MODES.
# ROOM_GROUPS=1: the room images get block groups of 32 MiB (mkfs.ext4 -g 8192) and a profile of 44 files
# of up to 2 MiB (about 45 MiB, longer than a block group), so that MakeRoom clears a window over two whole
# block groups (room.h). ROOM_GROUPS=spots: so do they, with no reserved blocks (-m 0) and 60 files of up
# to 1,064 KiB (35.0 MiB with SEED=1), but only the 64 MiB from 320 MiB (block groups 10 and 11, the lowest pair
# that holds no metadata: 1, 3, 5, 7 and 9 have backup superblocks) is cut up: the first 4 MiB of each
# group keep their files, 56 MiB are freed (of which ordinary users may use 40: ext4 keeps 16 MiB,
# reserved_clusters), the rest of the filesystem stays full; the files moved out of that window then have
# nowhere to go but into its holes (test-mover-room room_spots on a bare filesystem). With either, every room
# run (and its reference) says from which block groups fill files were moved out (FIEMAP) and how many of
# them lie in those groups again (spots of the window). DROP=files: before each sha256 check only the
# image's files leave the page cache (each one's, with dd iflag=nocache), not the whole machine's (echo 3 >
# drop_caches), for a machine where others measure. Both default off.
. "$(dirname "$0")/campaign-lib.sh"
. "$(dirname "$0")/../lib.sh"

RUNS=${RUNS:-5} SEED=${SEED:-1} RATE=${RATE:-8} PER_IMAGE=${PER_IMAGE:-4} FAULT=${FAULT:-}
read -r -a MODES <<<"${MODES:-plain resume room early}"
NFILES=${NFILES:-30} ROOM_GROUPS=${ROOM_GROUPS:-0} DROP=${DROP:-all}

if [ "$DROP" = files ]; then
        verify_checksums() {    # lib.sh's, without dropping the machine's caches
                sync
                (cd "$MNT" && find . -xdev -type f -not -path './lost+found/*' -exec dd if={} iflag=nocache count=0 status=none \;)
                (cd "$MNT" && sha256sum --quiet -c "$1") || fail "checksums differ after relocation"
        }
fi

IMG=$TMP/work.img MNT=$TMP/mnt
truncate -s 1G "$IMG"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
attach_mount
start_bus

config_hold() {   # no run starts by itself
        write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$RATE
EarlyBudgetSec=60
[Idle]
IdleSec=3600
EOC
}
config_resume() { # an interrupted run resumes 2 s after the start
        write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$RATE
EarlyBudgetSec=60
[Idle]
IdleSec=2
BootQuietSec=0
MaxLoadPerCPU=100
MaxIOPressure=100
EOC
}
daemon_up() { start_daemon --filesystem="$MNT"; wait_until 30 boot_recording_over || run_fail "boot window did not close"; }
daemon_kill() { kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=; }
daemon_down() { [ -z "$DAEMON_PID" ] || stop_daemon; }
unfinished_runs() { db "SELECT COUNT(*) FROM runs WHERE state = 'running'"; }
last_run() { db "SELECT COALESCE(MAX(id), 0) FROM runs"; }
done_files_of() {  # RUN: paths checkpointed done
        db "SELECT f.path FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = $1 AND rf.state = 'done'"
}
extents_of_list() { local f; while read -r f; do echo "$f"; file_extents "$f"; done < "$1"; }

# A base: aged files (plus, for "aged", a 12 MiB program written in fragments) read by bin/prog in a seeded
# order; for "room", the rest of the filesystem filled with 1 MiB files and every other MiB of 128-640 MiB
# and 660-700 MiB freed again (the only free range that holds the donor lies far out; tests/test-mover-room.c
# "room" does the same on a bare filesystem; ROOM_GROUPS=spots frees another pattern, see above). Then the
# references: uninterrupted runs on copies.
make_base() {   # KIND SEED
        local kind=$1 seed=$2 name=$1.$2 f mib t0 n
        [ -e "$TMP/base.$name.img" ] && return 0
        CURRENT_RUN="base $name"
        detach_unmount
        local mkfs_extra=() max_kib=1024
        if [ "$kind" = room ] && [ "$ROOM_GROUPS" = 1 ]; then mkfs_extra=(-g 8192); max_kib=2048
        elif [ "$kind" = room ] && [ "$ROOM_GROUPS" = spots ]; then mkfs_extra=(-g 8192 -m 0); max_kib=1064; fi
        rm -f "$IMG"; truncate -s 1G "$IMG"
        mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "${mkfs_extra[@]}" "$IMG"
        attach_mount
        rm -rf "$STATE"; : > "$DAEMON_LOG"
        config_hold; daemon_up
        if [ "$kind" != room ]; then n=$NFILES
        elif [ "$ROOM_GROUPS" = 1 ]; then n=44
        elif [ "$ROOM_GROUPS" = spots ]; then n=60
        else n=16; fi
        bash "$SOURCE_ROOT/tools/age-image.sh" "$MNT" "$seed" "$n" "$max_kib" | sed 's/^/  /'
        mkdir -p "$MNT/bin"
        cp "$OPEN_FILES" "$MNT/bin/prog"
        local extra=()
        if [ "$kind" = aged ]; then
                cat /bin/sleep > "$MNT/bin/big"
                for _ in $(seq 12); do head -c 1M /dev/urandom >> "$MNT/bin/big"; sync; head -c 64K /dev/urandom > "$MNT/aged/.filler/big$_"; sync; done
                chmod +x "$MNT/bin/big"
                extra=("$MNT/bin/big")
        fi
        ls "$MNT"/aged/f* | awk -v s="$seed" 'BEGIN{srand(s)} {print rand() "\t" $0}' | sort | cut -f2 > "$TMP/order.in"
        sync
        # shellcheck disable=SC2046
        "$MNT/bin/prog" "${extra[@]}" $(cat "$TMP/order.in")
        wait_until 30 has_profile "$MNT/bin/prog" || run_fail "launch not recorded"
        if [ "$kind" = room ]; then
                # full to the last block: ext4's reserve (reserved_clusters) lifted meanwhile, 1 MiB files,
                # then the leftovers with 64 KiB and 4 KiB ones (kept: they lie outside the pattern below)
                local sysfs=/sys/fs/ext4/${LOOP#/dev/} resv
                resv=$(cat "$sysfs/reserved_clusters")
                echo 0 > "$sysfs/reserved_clusters"
                mkdir -p "$MNT/fill" "$MNT/rest"
                for ((i = 0; ; i++)); do
                        dd if=/dev/urandom of="$MNT/fill/$i" bs=1M count=1 status=none conv=fsync 2>/dev/null || { rm -f "$MNT/fill/$i"; break; }
                done
                for bs in 64K 4K; do
                        for ((i = 0; ; i++)); do
                                dd if=/dev/urandom of="$MNT/rest/$bs.$i" bs=$bs count=1 status=none conv=fsync 2>/dev/null || { rm -f "$MNT/rest/$bs.$i"; break; }
                        done
                done
                sync
                echo "$resv" > "$sysfs/reserved_clusters"
                for f in "$MNT"/fill/*; do
                        mib=$(filefrag -v "$f" | awk '$1 == "0:" && !seen { sub(/\.\..*/, "", $4); print int($4 / 256); seen = 1 }')
                        [ -n "$mib" ] || continue
                        if [ "$ROOM_GROUPS" = spots ]; then
                                if [ "$mib" -ge 320 ] && [ "$mib" -lt 384 ] && [ $(((mib - 320) % 32)) -ge 4 ]; then
                                        rm "$f"
                                fi
                        elif { [ "$mib" -ge 660 ] && [ "$mib" -lt 700 ]; } ||
                           { [ "$mib" -ge 128 ] && [ "$mib" -lt 640 ] && [ $((mib % 2)) = 1 ]; }; then
                                rm "$f"
                        fi
                done
                sync
        fi
        profile_paths "$MNT/bin/prog" > "$TMP/base.$name.order"
        checksum_all "$TMP/base.$name.sums"
        daemon_down
        base_save "$name"
        echo "  base $name: $(wc -l < "$TMP/base.$name.order") files in the profile, $(discontinuities_of $(cat "$TMP/base.$name.order")) discontinuities"

        # reference: uninterrupted run
        base_restore "$name"; : > "$DAEMON_LOG"
        [ "$kind" = room ] && [ "$ROOM_GROUPS" != 0 ] && fill_extents > "$TMP/fill.before"
        config_hold; daemon_up
        t0=$(now_ms)
        ctl --json=short optimize > "$TMP/ref.json" || run_fail "reference run failed: $(cat "$TMP/ref.json")"
        echo $(( $(now_ms) - t0 )) > "$TMP/base.$name.ms"
        donor_runs_of_last_run > "$TMP/base.$name.runs"
        discontinuities_of $(cat "$TMP/base.$name.order") > "$TMP/base.$name.disc"
        if [ "$kind" = room ]; then
                [ "$ROOM_GROUPS" = 0 ] || room_report | grep "room:" | sed 's/^  /  reference /'
                grep -q "cleared a window for the donor" "$DAEMON_LOG" ||
                        run_fail "the reference run made no room: $(grep -E 'window|donor in' "$DAEMON_LOG" | tail -n 3)"
                grep -oE "cleared a window for the donor at .*" "$DAEMON_LOG" | sed 's/^/  reference: /'
        fi
        daemon_down; remount; unaccounted > "$TMP/base.$name.acct.after"
        echo "  reference $name: $(cat "$TMP/base.$name.ms") ms, $(jq .moved_files "$TMP/ref.json") files moved, donor in $(cat "$TMP/base.$name.runs") run(s), $(cat "$TMP/base.$name.disc") discontinuities after"
        if [ "$kind" = aged ]; then
                # reference of the early pass: the program runs during the run, then the pass moves it
                base_restore "$name"; : > "$DAEMON_LOG"
                config_hold; daemon_up
                early_prepare
                t0=$(now_ms)
                "$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early.log" 2>&1 ||
                        run_fail "reference early pass failed: $(cat "$TMP/early.log")"
                echo $(( $(now_ms) - t0 )) > "$TMP/base.$name.early.ms"
                grep -q "bin/big: moved" "$TMP/early.log" || run_fail "reference early pass: $(cat "$TMP/early.log")"
                discontinuities_of $(cat "$TMP/base.$name.order") > "$TMP/base.$name.early.disc"
                echo "  reference $name early pass: $(cat "$TMP/base.$name.early.ms") ms, $(cat "$TMP/base.$name.early.disc") discontinuities after"
        fi
}

# The program runs while a run skips and queues it; the daemon is then stopped and the program ends.
early_prepare() {
        "$MNT/bin/big" 600 &
        local big=$!
        EXTRA_PIDS+=("$big")
        big_running() { [ "$(readlink "/proc/$big/exe" 2>/dev/null)" = "$MNT/bin/big" ]; }
        wait_until 10 big_running || run_fail "bin/big did not start"
        ctl --json=short optimize > "$TMP/opt.json" || run_fail "optimize failed: $(cat "$TMP/opt.json")"
        jq -e 'any(.skipped[]; (.path | endswith("/bin/big")) and (.reason | test("running")))' "$TMP/opt.json" >/dev/null ||
                run_fail "bin/big was not skipped: $(jq -c .skipped "$TMP/opt.json")"
        kill "$big"; wait "$big" 2>/dev/null || true; unset 'EXTRA_PIDS[-1]'
        daemon_down
}

# Kill the daemon at a random moment of the run going on (started DELAY_MS after t0); record what the
# database says then. Appends to the run's kill log.
KILLS=0 INTERRUPTS=0 PHASES=()
kill_at() {     # T0_MS DELAY_MS
        local t=$(( $1 + $2 - $(now_ms) ))
        [ "$t" -le 0 ] || sleep "$(awk -v t="$t" 'BEGIN { printf "%.3f", t / 1000 }')"
        local run pend done_n moved
        daemon_kill; KILLS=$((KILLS + 1))
        run=$(last_run)
        pend=$(db "SELECT COUNT(*) FROM run_files WHERE run_id = $run AND state = 'pending'")
        done_n=$(db "SELECT COUNT(*) FROM run_files WHERE run_id = $run AND state != 'pending'")
        local state; state=$(db "SELECT COALESCE((SELECT state FROM runs WHERE id = $run), 'none')")
        local phase
        if [ "$state" = none ]; then phase="before the run"
        elif [ "$state" != running ]; then phase="after the run"
        elif [ "$done_n" = 0 ]; then
                moved=0
                if [ -s "$TMP/fill.before" ]; then
                        moved=$(fill_moved)
                fi
                if [ "$moved" -gt 0 ]; then phase="making room ($moved files moved out)"; else phase="before the first file"; fi
        else phase="moving ($done_n done, $pend pending)"; fi
        [ "$state" = running ] && [ "$pend" -gt 0 ] && INTERRUPTS=$((INTERRUPTS + 1)) && [ "$done_n" -gt 0 ] && SPLITS=$((SPLITS + 1))
        PHASES+=("$phase")
        echo "  killed at +$2 ms: $phase"
        KILL_RUN=$run KILL_PENDING=$pend KILL_STATE=$state
        sync
        verify_checksums "$TMP/base.$BASE.sums"
        if [ "$state" = running ]; then
                done_files_of "$run" > "$TMP/done.$KILLS.list"
                extents_of_list "$TMP/done.$KILLS.list" > "$TMP/done.$KILLS.extents"
        fi
}
fill_extents() { local f; for f in "$MNT"/fill/*; do echo "$f $(file_extents "$f" | head -n1)"; done; }
fill_moved() { fill_extents | diff "$TMP/fill.before" - | grep -c '^>' || true; }
# The fill files this run moved (out of the windows the daemon cleared, from FIEMAP against fill.before):
# the block groups their data lay in before, and how many of them lie in those groups again (spots of the
# window the donor is made around); then the daemon's own lines (a killed daemon logs no window line).
room_report() {
        local bpg
        bpg=$(dumpe2fs -h "$LOOP" 2>/dev/null | awk -F: '/^Blocks per group/ { print $2 + 0 }')
        { fill_extents | diff "$TMP/fill.before" - || true; } | awk -v bpg="$bpg" '
                $1 == "<" { old[$2] = $4 } $1 == ">" { new[$2] = $4 }
                END {
                        for (f in new) if (f in old) { n++; g = int(old[f] / bpg); out[g]++; if (n == 1 || g < lo) lo = g; if (g > hi) hi = g }
                        if (n == 0) { print "  room: no fill file moved"; exit }
                        for (f in new) if (f in old) back[int(new[f] / bpg)]++
                        line = ""
                        for (g = lo; g <= hi; g++) if (out[g] > 0) line = line sprintf(" group %d: %d out, %d back in;", g, out[g], back[g])
                        printf "  room: %d fill files moved (block groups of %d MiB):%s\n", n, bpg / 256, line }'
        grep -oE "(cleared a window for the donor|the window for the donor) at .*|Run [0-9]+ on [^ ]+ (finished|cancelled|failed): .*" \
                "$DAEMON_LOG" | sed 's/^/  daemon: /' || true
}

# Restart and wait until no run is left unfinished; the resume line must agree with the kill's database.
restart_and_finish() {
        config_resume; daemon_up
        local before; before=$(grep -c "Resuming interrupted run" "$DAEMON_LOG" || true)
        if [ "$KILL_STATE" = running ]; then
                wait_until 60 eval '[ "$(grep -c "Resuming interrupted run" "$DAEMON_LOG")" -gt "$before" ]' ||
                        run_fail "the interrupted run was not resumed"
                local line; line=$(grep "Resuming interrupted run" "$DAEMON_LOG" | tail -n1)
                [[ $line == *"run $KILL_RUN on"*": $KILL_PENDING of "* ]] ||
                        run_fail "resume disagrees with the checkpoints at the kill ($KILL_PENDING pending in run $KILL_RUN): $line"
        fi
}
wait_settled() {
        wait_until 180 eval '[ "$(unfinished_runs)" = 0 ] && not_optimizing' || run_fail "the run did not finish"
}

TOTAL_BYTES=0 TOTAL_KILLS=0 TOTAL_INTERRUPTS=0 TOTAL_SPLITS=0 CORRUPT=0 FSCKERR=0 LEAKED=0 CRASHES=0
declare -A PHASE_COUNT=()
for ((run = 0; run < RUNS; run++)); do
        mode=${MODES[run % ${#MODES[@]}]}
        kind=aged; [ "$mode" = room ] && kind=room
        bseed=$((SEED + run / ${#MODES[@]} / PER_IMAGE))
        make_base "$kind" "$bseed"
        BASE=$kind.$bseed
        RANDOM=$((SEED * 7919 + run))
        CURRENT_RUN="$run (mode $mode, image $BASE, RANDOM seed $((SEED * 7919 + run)))"
        echo "run $run: $mode on $BASE"
        base_restore "$BASE"; : > "$DAEMON_LOG"
        KILLS=0 INTERRUPTS=0 SPLITS=0 PHASES=() KILL_STATE=none
        acct0=$(unaccounted)
        mapfile -t order < "$TMP/base.$BASE.order"
        ref_ms=$(cat "$TMP/base.$BASE.ms")
        rm -f "$TMP/fill.before" "$TMP"/done.*
        [ "$kind" = room ] && fill_extents > "$TMP/fill.before"
        config_hold; daemon_up
        if [ "$mode" = early ]; then
                early_prepare
                "$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early1.log" 2>&1 &
                epid=$!
                d=$(rand_below "$(cat "$TMP/base.$BASE.early.ms")"); sleep "$(awk -v t="$d" 'BEGIN { printf "%.3f", t / 1000 }')"
                if kill -0 "$epid" 2>/dev/null; then
                        kill -KILL "$epid"; KILLS=1
                        wait "$epid" 2>/dev/null || true
                        if grep -q "bin/big: moved" "$TMP/early1.log"; then PHASES+=("early pass, after the move")
                        else PHASES+=("early pass, before or during the move"); INTERRUPTS=1; fi
                else
                        wait "$epid" || true; PHASES+=("early pass already over")
                fi
                echo "  early pass killed at +$d ms: ${PHASES[-1]}"
                verify_checksums "$TMP/base.$BASE.sums"
                if [ "$FAULT" != skip-restart ]; then
                        "$SEEKLESSD" --early-pass --config="$CONF" --state-dir="$STATE" --filesystem="$MNT" > "$TMP/early2.log" 2>&1 ||
                                run_fail "second early pass failed: $(cat "$TMP/early2.log")"
                fi
                # a pass killed mid-way leaves its run 'running', the program pending in it and still queued:
                # the second pass takes it over; without one (skip-restart) the live daemon resumes that run
                # when idle
                if [ "$(unfinished_runs)" != 0 ] && [ "$FAULT" != skip-restart ]; then
                        PHASES[-1]="early pass, resumed by the daemon"
                        config_resume; daemon_up
                        wait_until 60 grep -q "Resuming interrupted run" "$DAEMON_LOG" || run_fail "the interrupted early pass was not resumed"
                        wait_settled; daemon_down
                fi
                # grep reads the files itself: `cat | grep -q` fails under pipefail when grep stops at a
                # match while cat still writes (SIGPIPE)
                grep -sqE "bin/big: moved|Resuming interrupted run" "$TMP/early1.log" "$TMP/early2.log" "$DAEMON_LOG" ||
                        run_fail "bin/big was never moved: $(cat "$TMP/early1.log" "$TMP/early2.log")"
                [ "$(unfinished_runs)" = 0 ] || run_fail "a run is still marked running"
                queued=$(db "SELECT COUNT(*) FROM run_files rf WHERE rf.state = 'retry' AND rf.why = 'running'
                        AND rf.run_id = (SELECT MAX(run_id) FROM run_files r2 WHERE r2.file_id = rf.file_id)")
                [ "$queued" = 0 ] || run_fail "$queued file(s) still queued for the early pass"
                allowed=$(cat "$TMP/base.$BASE.early.disc")
                [ "$INTERRUPTS" = 0 ] || allowed=$((allowed + 1))
        else
                ctl --json=short optimize --no-block > "$TMP/opt.json" || run_fail "optimize --no-block failed"
                t0=$(now_ms)
                kill_at "$t0" "$(rand_below "$ref_ms")"
                if [ "$FAULT" != skip-restart ]; then
                        restart_and_finish
                        if [ "$mode" = resume ] && [ "$KILL_STATE" = running ]; then
                                t0=$(now_ms)
                                kill_at "$t0" "$(rand_below $((ref_ms / 2 + 1)))"
                                restart_and_finish
                        fi
                        wait_settled
                        if [ "$KILL_STATE" = none ]; then
                                # killed before the run was recorded: nothing to resume; a new run does it all
                                ctl --json=short optimize > "$TMP/opt2.json" || run_fail "optimize after the kill failed"
                        fi
                fi
                daemon_down
                # checkpoints: nothing left running or pending; what was done before a kill stayed put
                [ "$(unfinished_runs)" = 0 ] || run_fail "a run is still marked running"
                pend=$(db "SELECT COUNT(*) FROM run_files rf JOIN runs r ON r.id = rf.run_id WHERE r.state = 'done' AND rf.state = 'pending'")
                [ "$pend" = 0 ] || run_fail "$pend file(s) left pending in finished runs"
                for ((k = 1; k <= KILLS; k++)); do
                        [ -e "$TMP/done.$k.list" ] || continue
                        extents_of_list "$TMP/done.$k.list" | cmp -s - "$TMP/done.$k.extents" ||
                                run_fail "files checkpointed done before kill $k were moved again"
                done
                # the last run's donor runs; a resumed run that found nothing left to move (the kill came
                # after its last file) says "donor in 0 run(s)": the layout is the killed run's, counted as 1
                runs_now=$(donor_runs_of_last_run); runs_now=${runs_now:-1}
                [ "$runs_now" -ge 1 ] || runs_now=1
                ref_disc=$(cat "$TMP/base.$BASE.disc")
                allowed=$((ref_disc + SPLITS + runs_now - 1))
        fi
        if [ "$FAULT" = corrupt ]; then
                printf 'X' | dd of="${order[3]}" bs=1 seek=100 conv=notrunc status=none
        fi
        verify_checksums "$TMP/base.$BASE.sums"
        disc=$(discontinuities_of "${order[@]}")
        [ "$disc" -le "$allowed" ] || run_fail "layout: $disc discontinuities, reference $(cat "$TMP/base.$BASE.disc"), allowed $allowed"
        if [ "$FAULT" = leak ]; then
                umount "$MNT"; debugfs -w -R "unlink /${order[5]#$MNT/}" "$LOOP" >/dev/null 2>&1; mount -t ext4 "$LOOP" "$MNT"
        fi
        remount
        acct1=$(unaccounted)
        [ "$acct1" = "$acct0" ] || run_fail "blocks not accounted for: $acct0 before, $acct1 after (a leaked donor?)"
        [ "$kind" = room ] && [ "$ROOM_GROUPS" != 0 ] && room_report
        fsck_and_orphans
        grep -qE "(AddressSanitizer|runtime error|Assertion|segfault)" "$DAEMON_LOG" && run_fail "the daemon crashed: see its log"
        bytes=$(awk '{ print $2 }' "$TMP/base.$BASE.sums" | (cd "$MNT" && xargs -d '\n' stat -c %s) | awk '{ s += $1 } END { print s }')
        TOTAL_BYTES=$((TOTAL_BYTES + bytes * (KILLS + 1)))
        TOTAL_KILLS=$((TOTAL_KILLS + KILLS)) TOTAL_INTERRUPTS=$((TOTAL_INTERRUPTS + INTERRUPTS)) TOTAL_SPLITS=$((TOTAL_SPLITS + SPLITS))
        for p in "${PHASES[@]}"; do p=${p%% (*}; p=${p%% [0-9]*}; PHASE_COUNT[$p]=$(( ${PHASE_COUNT[$p]:-0} + 1 )); done
        pass "run $run ($mode): $KILLS kill(s), $INTERRUPTS interrupted a run, layout $disc <= $allowed discontinuities, blocks accounted ($acct1), fsck clean"
done
echo "SUMMARY kill campaign: runs=$RUNS seed=$SEED kills=$TOTAL_KILLS interrupted=$TOTAL_INTERRUPTS split=$TOTAL_SPLITS bytes_verified=$TOTAL_BYTES corruptions=0 fsck_errors=0 leaked_blocks=0 crashes=0"
for p in "${!PHASE_COUNT[@]}"; do echo "  killed $p: ${PHASE_COUNT[$p]}"; done
pass "kill campaign: $RUNS runs"
