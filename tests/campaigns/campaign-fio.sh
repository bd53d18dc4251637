#!/bin/bash
# Safety campaign 1 (issue 21): concurrent I/O with fio's verification while a relocation run moves a
# profile's files. RUNS runs (default 3: the CI version; by hand RUNS=100), each on a restored copy of an
# aged image (one per seed, PER_IMAGE runs each):
#   - the image: NFILES aged files; the even-numbered ones are overwritten in place (same blocks) with fio's
#     verify pattern (crc32c headers): the "readable" files; the odd ones keep random data: the "writable"
#     files, on which a lost fio write would leave a block without fio's header. The first NPROF files are
#     read by bin/prog (the profile, relocated); the others are their neighbours on disk.
#   - a seeded job mix of 3-8 fio jobs, each on files of the profile or on neighbours: readers (psync
#     buffered, psync O_DIRECT, libaio O_DIRECT, mmap; time_based, verify=crc32c, verify_fatal) on readable
#     files, and one writer per writable file (psync buffered overwrite, psync O_DIRECT, libaio O_DIRECT,
#     mmap, appender with file_append; one rate-limited pass over the file, verify=crc32c with
#     verify_backlog and verify_fatal); fio starts 1 s before `seeklessctl optimize` and must still be running
#     when the run ends (RateLimitMiBps= stretches the run; the timestamps are printed);
#   - afterwards: fio's exit status and per-job errors; with caches dropped, what every writer wrote read
#     back from disk by a verifying fio read (header and crc32c of every block; a lost write leaves random
#     data without fio's header) and every appender's tail likewise; sha256 of every
#     file fio did not write (an appender's old part by its prefix); the writable files the run had to leave
#     (open for writing) or moved; blocks accounted after a remount (tests/campaigns/campaign-lib.sh); e2fsck -fn.
# FAULT=corrupt (a byte of a readable profile file changed during the run) or FAULT=lostwrite (a block of a
# written file replaced after fio ended) must make it fail. Knobs: RUNS SEED RATE PER_IMAGE NFILES NPROF.
. "$(dirname "$0")/campaign-lib.sh"
. "$(dirname "$0")/../lib.sh"

command -v fio >/dev/null || { echo "SKIP: fio is not installed"; exit 77; }
RUNS=${RUNS:-3} SEED=${SEED:-1} RATE=${RATE:-2} PER_IMAGE=${PER_IMAGE:-5} FAULT=${FAULT:-}
NFILES=${NFILES:-30} NPROF=${NPROF:-22}

IMG=$TMP/work.img MNT=$TMP/mnt
truncate -s 1G "$IMG"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
attach_mount
start_bus
write_config <<EOC
[Record]
BootWindowSec=1
LaunchWindowSec=3
[Optimize]
MinFileAgeSec=0
RateLimitMiBps=$RATE
[Idle]
IdleSec=3600
EOC

make_base() {   # SEED
        local seed=$1 name=$1 f i t0
        [ -e "$TMP/base.$name.img" ] && return 0
        CURRENT_RUN="base $name"
        detach_unmount
        rm -f "$IMG"; truncate -s 1G "$IMG"
        mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
        attach_mount
        rm -rf "$STATE"; : > "$DAEMON_LOG"
        start_daemon --filesystem="$MNT"; wait_until 30 boot_recording_over || run_fail "boot window did not close"
        bash "$SOURCE_ROOT/tools/age-image.sh" "$MNT" "$seed" "$NFILES" 1024 | sed 's/^/  /'
        filefrag "$MNT"/aged/f* | awk '{ print $(NF - 2) }' > "$TMP/extents.before"
        for ((i = 0; i < NFILES; i += 2)); do
                printf -v f '%s/aged/f%03d' "$MNT" "$i"
                fio --verify_state_save=0 --name=prefill --filename="$f" --size="$(stat -c %s "$f")" --bs=4k --rw=write --overwrite=1 \
                    --verify=crc32c --do_verify=0 --randseed="$seed" --output=/dev/null || run_fail "prefill of $f"
        done
        sync
        filefrag "$MNT"/aged/f* | awk '{ print $(NF - 2) }' | cmp -s - "$TMP/extents.before" ||
                run_fail "the prefill moved blocks (the aged layout must stay)"
        mkdir -p "$MNT/bin"; cp "$OPEN_FILES" "$MNT/bin/prog"
        ls "$MNT"/aged/f* | head -n "$NPROF" | awk -v s="$seed" 'BEGIN{srand(s)} {print rand() "\t" $0}' | sort | cut -f2 > "$TMP/order.in"
        sync
        # shellcheck disable=SC2046
        "$MNT/bin/prog" $(cat "$TMP/order.in")
        wait_until 30 has_profile "$MNT/bin/prog" || run_fail "launch not recorded"
        profile_paths "$MNT/bin/prog" > "$TMP/base.$name.order"
        checksum_all "$TMP/base.$name.sums"
        stop_daemon
        base_save "$name"
        # reference: how long an undisturbed run takes
        base_restore "$name"
        start_daemon --filesystem="$MNT"; wait_until 30 boot_recording_over || run_fail "boot window did not close"
        t0=$(now_ms)
        ctl --json=short optimize > "$TMP/ref.json" || run_fail "reference run failed"
        echo $(( $(now_ms) - t0 )) > "$TMP/base.$name.ms"
        stop_daemon
        echo "  base $name: $(wc -l < "$TMP/base.$name.order") profile files; undisturbed run $(cat "$TMP/base.$name.ms") ms, $(jq .moved_files "$TMP/ref.json") moved"
}

READERS=(psync-buffered psync-direct libaio-direct mmap)
WRITERS=(psync-buffered psync-direct libaio-direct mmap append)
engine_opts() {
        case $1 in
        psync-buffered) echo "ioengine=psync" ;;
        psync-direct) echo "ioengine=psync"; echo "direct=1" ;;
        libaio-direct) echo "ioengine=libaio"; echo "direct=1"; echo "iodepth=8" ;;
        mmap) echo "ioengine=mmap" ;;
        append) echo "ioengine=psync"; echo "file_append=1" ;;
        esac
}

TOTAL_JOBS=0 TOTAL_BYTES=0 TOTAL_FIO_BYTES=0 W_MOVED=0 W_SKIPPED=0 MOVED_DURING=0
for ((run = 0; run < RUNS; run++)); do
        bseed=$((SEED + run / PER_IMAGE))
        make_base "$bseed"
        BASE=$bseed
        RANDOM=$((SEED * 7919 + run))
        CURRENT_RUN="$run (image seed $BASE, RANDOM seed $((SEED * 7919 + run)))"
        base_restore "$BASE"; : > "$DAEMON_LOG"
        acct0=$(unaccounted)
        ref_ms=$(cat "$TMP/base.$BASE.ms")
        secs=$(( ref_ms / 1000 + 4 ))          # fio's time: the run's and some
        # the job mix
        readable=() writable=()
        for ((i = 0; i < NFILES; i++)); do
                printf -v f 'aged/f%03d' "$i"
                if ((i % 2 == 0)); then readable+=("$f"); else writable+=("$f"); fi
        done
        njobs=$((3 + $(rand_below 6)))
        : > "$TMP/jobs.fio"; : > "$TMP/written"; : > "$TMP/appended"
        printf '[global]\ndirectory=%s\nbs=4k\nverify=crc32c\nverify_fatal=1\nverify_state_save=0\nrandrepeat=1\n' "$MNT" >> "$TMP/jobs.fio"
        mix=()
        for ((j = 0; j < njobs; j++)); do
                if (( $(rand_below 2) == 0 )); then
                        k=${READERS[$(rand_below ${#READERS[@]})]}
                        f=${readable[$(rand_below ${#readable[@]})]}
                        printf '[r%d-%s]\nfilename=%s\nrw=randread\nsize=%s\ntime_based=1\nruntime=%s\n' \
                                "$j" "$k" "$f" "$(( $(stat -c %s "$MNT/$f") / 4096 * 4096 ))" "$secs" >> "$TMP/jobs.fio"
                else
                        [ ${#writable[@]} -gt 0 ] || continue
                        k=${WRITERS[$(rand_below ${#WRITERS[@]})]}
                        w=$(rand_below ${#writable[@]}); f=${writable[$w]}
                        writable=("${writable[@]:0:w}" "${writable[@]:w+1}")
                        # whole blocks: with a size that is not a multiple of bs, fio's verify_only replay
                        # misses a replaced block (seen with fio 3.33)
                        size=$(( $(stat -c %s "$MNT/$f") / 4096 * 4096 ))
                        if [ "$k" = append ]; then
                                echo "$f $(stat -c %s "$MNT/$f")" >> "$TMP/appended"; size=262144
                        else
                                echo "$f" >> "$TMP/written"
                        fi
                        rate=$(( size / (secs - 1) )); [ "$rate" -ge 4096 ] || rate=4096
                        printf '[w%d-%s]\nfilename=%s\nrw=%s\nsize=%s\nrate=%s\nverify_backlog=16\nrandseed=%s\n' \
                                "$j" "$k" "$f" "$([ "$k" = append ] && echo write || echo randwrite)" "$size" "$rate" \
                                "$((run + j + 11))" >> "$TMP/jobs.fio"
                fi
                engine_opts "$k" >> "$TMP/jobs.fio"
                where=neighbour; grep -qxF "$MNT/$f" "$TMP/base.$BASE.order" && where=profile
                mix+=("${f#aged/}:$([ "${f: -1}" ] && [ $((10#${f: -1} % 2)) = 0 ] && echo read || echo write)-$k:$where")
                TOTAL_JOBS=$((TOTAL_JOBS + 1))
        done
        echo "run $run: ${mix[*]}"
        # the prefixes the appenders keep
        while read -r f size; do head -c "$size" "$MNT/$f" | sha256sum > "$TMP/prefix.$(basename "$f")"; done < "$TMP/appended"

        start_daemon --filesystem="$MNT"; wait_until 30 boot_recording_over || run_fail "boot window did not close"
        t_fio0=$(now_ms)
        fio --output-format=json --output="$TMP/fio.json" "$TMP/jobs.fio" 2> "$TMP/fio.err" &
        fio_pid=$!; EXTRA_PIDS+=("$fio_pid")
        sleep 1
        if [ "$FAULT" = corrupt ]; then
                victim=$(grep -E '[02468]$' "$TMP/base.$BASE.order" | head -n1)     # a readable profile file
                ( sleep 1; printf 'X' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none; echo "  FAULT: corrupted $victim" ) &
        fi
        t_opt0=$(now_ms)
        ctl --json=short optimize > "$TMP/opt.json" || run_fail "optimize failed: $(cat "$TMP/opt.json")"
        t_opt1=$(now_ms)
        kill -0 "$fio_pid" 2>/dev/null || run_fail "fio ended before the run did (no overlap): fio from +0, run +$((t_opt0 - t_fio0))..+$((t_opt1 - t_fio0)) ms"
        rc=0; wait "$fio_pid" || rc=$?; unset 'EXTRA_PIDS[-1]'
        t_fio1=$(now_ms)
        moved=$(jq .moved_files "$TMP/opt.json")
        echo "  fio +0..+$((t_fio1 - t_fio0)) ms; run +$((t_opt0 - t_fio0))..+$((t_opt1 - t_fio0)) ms: $moved files moved, skipped: $(jq -c '[.skipped[] | "\(.path | sub(".*/"; "")): \(.reason)"]' "$TMP/opt.json")"
        [ "$rc" = 0 ] || { head -n 20 "$TMP/fio.err"; run_fail "fio failed (exit $rc)"; }
        jq -e '[.jobs[] | .error] | all(. == 0)' "$TMP/fio.json" >/dev/null || run_fail "a fio job reported an error: $(jq -c '[.jobs[] | {jobname, error}]' "$TMP/fio.json")"
        [ "$moved" -gt 0 ] || run_fail "the run moved nothing"
        MOVED_DURING=$((MOVED_DURING + moved))
        fio_bytes=$(jq '[.jobs[] | .read.io_bytes] | add // 0' "$TMP/fio.json")
        stop_daemon

        if [ "$FAULT" = lostwrite ] && [ -s "$TMP/written" ]; then
                f=$(head -n1 "$TMP/written"); dd if=/dev/urandom of="$MNT/$f" bs=4k count=1 conv=notrunc status=none
                echo "  FAULT: block 0 of $f replaced"
        fi
        drop_image_pages
        # what the writers wrote, read back from disk and verified; the appenders' tails likewise
        for sec in $(grep -o '^\[w[^]]*\]' "$TMP/jobs.fio" | tr -d '[]'); do
                if [[ $sec == *append ]]; then
                        f=$(awk -v s="[$sec]" '$0 == s { on = 1; next } /^\[/ { on = 0 } on && /^filename=/ { sub(/^filename=/, ""); print }' "$TMP/jobs.fio")
                        old=$(awk -v f="$f" '$1 == f { print $2 }' "$TMP/appended")
                        fio --verify_state_save=0 --name=tail --filename="$MNT/$f" --offset="$old" --size=262144 --bs=4k --rw=read --verify=crc32c \
                            --verify_fatal=1 --output=/dev/null 2>> "$TMP/fio.err" || run_fail "the appended part of $f does not verify"
                        [ "$(stat -c %s "$MNT/$f")" = $((old + 262144)) ] || run_fail "$f: wrong size after appending"
                        [ "$(head -c "$old" "$MNT/$f" | sha256sum)" = "$(cat "$TMP/prefix.$(basename "$f")")" ] || run_fail "$f: its old part changed"
                else
                        # read back whole from disk, every block's header and crc32c checked (not fio's
                        # verify_only replay: with fio 3.33 it missed a replaced block under libaio and mmap)
                        f=$(awk -v s="[$sec]" '$0 == s { on = 1; next } /^\[/ { on = 0 } on && /^filename=/ { sub(/^filename=/, ""); print }' "$TMP/jobs.fio")
                        size=$(awk -v s="[$sec]" '$0 == s { on = 1; next } /^\[/ { on = 0 } on && /^size=/ { sub(/^size=/, ""); print }' "$TMP/jobs.fio")
                        fio --verify_state_save=0 --name=check --filename="$MNT/$f" --size="$size" --bs=4k --rw=read --ioengine=psync --verify=crc32c \
                            --verify_fatal=1 --output=/dev/null 2>> "$TMP/fio.err" ||
                                { tail -n 5 "$TMP/fio.err"; run_fail "what job $sec wrote does not verify from disk after the run"; }
                fi
        done
        # files fio wrote: moved or left with a reason
        while read -r f; do
                grep -qxF "$MNT/$f" "$TMP/base.$BASE.order" || continue     # a neighbour: not planned
                r=$(jq -r --arg p "$MNT/$f" '[.skipped[] | select(.path == $p) | .reason] | first // "moved"' "$TMP/opt.json")
                if [ "$r" = moved ]; then W_MOVED=$((W_MOVED + 1)); else W_SKIPPED=$((W_SKIPPED + 1)); fi
        done < <(cat "$TMP/written"; awk '{ print $1 }' "$TMP/appended")
        # sha256 of every file fio did not write
        { echo "/"; cat "$TMP/written"; awk '{ print $1 }' "$TMP/appended"; } | sed 's|^|./|' > "$TMP/excluded"   # never empty
        awk 'NR == FNR { x["  " $0] = 1; next } { p = substr($0, 65) } !(p in x)' "$TMP/excluded" "$TMP/base.$BASE.sums" > "$TMP/sums.kept"
        verify_checksums "$TMP/sums.kept"
        bytes=$(awk '{ print substr($0, 67) }' "$TMP/sums.kept" | (cd "$MNT" && xargs -d '\n' stat -c %s) | awk '{ s += $1 } END { print s }')
        TOTAL_BYTES=$((TOTAL_BYTES + bytes)) TOTAL_FIO_BYTES=$((TOTAL_FIO_BYTES + fio_bytes))
        remount
        acct1=$(unaccounted)
        [ "$acct1" = "$acct0" ] || run_fail "blocks not accounted for: $acct0 before, $acct1 after"
        fsck_and_orphans
        pass "run $run: fio verified $((fio_bytes >> 20)) MiB, sha256 of $(wc -l < "$TMP/sums.kept") files, blocks accounted, fsck clean"
done
echo "SUMMARY fio campaign: runs=$RUNS seed=$SEED jobs=$TOTAL_JOBS fio_read_verified_bytes=$TOTAL_FIO_BYTES sha256_bytes=$TOTAL_BYTES files_moved_under_io=$MOVED_DURING written_files_moved=$W_MOVED written_files_left=$W_SKIPPED corruptions=0 fsck_errors=0 leaked_blocks=0 crashes=0"
pass "fio campaign: $RUNS runs"
