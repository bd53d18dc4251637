#!/bin/bash
# Guest side of test-vm-powercut.sh (run.sh on the data disk; runs in /mnt/vmtest after each boot of the
# guest). The host cuts the power (SIGKILL of QEMU) while a relocation run moves files on the root
# filesystem, then boots the same disks again. Per boot, from the files on the data disk:
#   setup   (once per root image; /opt/powercut/.ready marks it done) NFILES files of random data (1 KiB to
#           MAXKIB KiB) on the root filesystem, scattered in place (scatter), read by /opt/powercut/bin/prog
#           in a shuffled order: its launch profile; then launch recording off (the checks' own tools would
#           be new profiles, and new profiles start runs) and sha256, mtime and size of every file of every
#           profile on / (what a run may move). The idle policy starts nothing in this boot. Ends here when
#           `mode` says "setup".
#   cut     the configuration for the next boot (95-powercut-resume.conf: the idle policy resumes a run at
#           once), blocks accounted (used - blocks of every reachable inode), `seeklessctl optimize
#           --no-block`, the data disk synced (`armed`, run.json, out.boot1.log) and a console line
#           "POWERCUT-ARM" on which the host arms the cut; then waits, writing nothing to either disk.
#   verify  (the boot after the cut: `armed` exists) the kernel replayed the journal; the interrupted run
#           is resumed by the daemon and finishes (the host says what the database held at the cut, on the
#           kernel command line: powercut.expect=resume:RUN:PENDING:TOTAL, done:RUN or none; with none or
#           done, `seeklessctl optimize` does what is left); every profile file whose mtime and size are
#           those of the setup has its sha256; the blocks are accounted as before the run (no leaked donor,
#           orphan processing done); the launch profile is less scattered. (Every other file of the
#           filesystem the host compares with the base image.)
# Results: out.log (the harness), `result` (key=value lines the host reads), "ok: ..." per check; the first
# failure prints "FAIL: ..." and exits 1.
set -uo pipefail
cd "$(dirname "$0")"
PATH=/usr/sbin:/usr/bin:/sbin:/bin
n=$(( $(cat bootcount 2>/dev/null || echo 0) + 1 ))
echo "$n" > bootcount
echo "== boot $n ($(cut -d' ' -f1 /proc/uptime) s since boot)"

P=/opt/powercut         # not under /var/tmp: seeklessd.service has PrivateTmp=yes and names no file there
NFILES=$(cat nfiles 2>/dev/null || echo 100)
MAXKIB=$(cat maxkib 2>/dev/null || echo 512)
SEED=$(cat seed 2>/dev/null || echo 1)
RATE=$(cat rate 2>/dev/null || echo 0)
CONF=/etc/seekless/seekless.conf.d

fail() { echo "FAIL (boot $n): $*"; journalctl -b --no-pager -o cat -u seeklessd | tail -n 40; exit 1; }
T0=$SECONDS
ok() { echo "ok: $*"; }
step() { echo "-- $* (+$((SECONDS - T0)) s)" >&2; }
result() { echo "$1=$2" >> result; }
console() { echo "$*" > /dev/ttyS0; }
wait_for() {            # SECONDS CMD...
        local i
        for ((i = 0; i < $1; i++)); do "${@:2}" && return 0; sleep 1; done
        return 1
}
journal() { journalctl -b --no-pager -o cat -u seeklessd; }
prop() { busctl --system get-property org.seekless.Seekless1 /org/seekless/Seekless1 org.seekless.Seekless1.Manager "$1"; }
boot_recording_over() { [ "$(prop BootRecording 2>/dev/null)" = "b false" ]; }
optimizing() { [ "$(prop Optimizing 2>/dev/null)" = "b true" ]; }
not_optimizing() { ! optimizing; }
has_profile() { seeklessctl --json=short profiles | jq -e --arg n "$1" 'any(.[]; .name == $n)' >/dev/null; }
# blocks in use that no inode reachable from / accounts for (bitmaps, inode tables, journal, and any
# unnamed inode: a leaked donor); 4 KiB blocks
unaccounted() {
        local used files
        sync -f /
        used=$(stat -f -c '%b %f' / | awk '{ print $1 - $2 }')
        files=$(find / -xdev -printf '%i %b\n' | awk '!seen[$1]++ { s += $2 } END { print s / 8 }')    # hard links once
        echo $((used - files))
}
# "sha256 mtime size path" of every regular file of every profile on / (not the data disk)
profile_sums() {        # OUT
        seeklessctl --json=short profiles | jq -r '.[].name' | while read -r p; do
                seeklessctl --json=short show "$p" | jq -r '.files[].path'
        done | grep -v '^/mnt/vmtest/' | sort -u | while read -r f; do
                [ -f "$f" ] && printf '%s\0' "$f"
        done | xargs -0 stat -c '%.9Y %s %n' > /run/ps.meta
        cut -d' ' -f3- /run/ps.meta | tr '\n' '\0' | xargs -0 sha256sum > /run/ps.sha
        # join on the path
        awk 'NR == FNR { sha[substr($0, 67)] = $1; next }
             { p = $0; sub(/^[^ ]* [^ ]* /, "", p); if (p in sha) print sha[p], $1, $2, p }' /run/ps.sha /run/ps.meta > "$1"
        rm -f /run/ps.sha /run/ps.meta
}
# discontinuities of files read whole in the given order (filefrag -v, 4 KiB blocks; a hole is no break)
discontinuities() {
        local f i=0
        while read -r f; do
                i=$((i + 1))
                filefrag -v "$f" | awk -v f="$i" '/^ *[0-9]+:/ { gsub(/\.\./, " "); gsub(/:/, " "); print f, $2, $4, $6 }'
        done | awk 'NR > 1 && $3 != next_start && !($1 == file && $3 - next_start == $2 - next_logical) { d++ }
                    { file = $1; next_start = $3 + $4; next_logical = $2 + $4 }
                    END { print d + 0 }'
}

phase_setup() {
        local t0=$SECONDS i size
        mkdir -p "$P/bin" "$P/data" "$P/fill"
        install -m755 prog "$P/bin/prog"
        RANDOM=$SEED
        for ((i = 0; i < NFILES; i++)); do
                size=$(( (((RANDOM << 15) | RANDOM) % MAXKIB + 1) * 1024 ))   # 1 KiB .. MAXKIB KiB
                head -c "$size" /dev/urandom > "$P/data/f$i"
        done
        sync
        step "files written"
        ls "$P"/data/f* | awk -v s="$SEED" 'BEGIN { srand(s) } { print rand() "\t" $0 }' | sort | cut -f2 > "$P/order"
        ./scatter "$P/fill" "$SEED" < "$P/order" > scatter.log || fail "scatter: $(tail -n1 scatter.log)"
        sync
        ok "$NFILES files, $(du -sm "$P/data" | cut -f1) MiB, aged: $(tail -n1 scatter.log)"

        # the test configuration; the idle policy starts nothing in this boot
        mkdir -p "$CONF"
        {
                printf '# test-vm-powercut.sh: files written just now may be moved; the run is started by hand\n'
                printf '[Record]\nBootTailSec=5\nLaunchWindowSec=5\n'
                printf '[Optimize]\nMinFileAgeSec=0\nRateLimitMiBps=%s\n' "$RATE"
                printf '[Idle]\nIdleSec=1d\nOptimizeNonRotational=yes\n'
        } > "$CONF/90-powercut.conf"
        systemctl restart seeklessd.service || fail "seeklessd did not restart"
        wait_for 60 boot_recording_over || fail "the boot window did not close"
        # shellcheck disable=SC2046
        "$P/bin/prog" $(cat "$P/order") || fail "prog could not read its files"
        wait_for 60 has_profile "$P/bin/prog" || fail "the launch was not recorded"
        seeklessctl --json=short show "$P/bin/prog" | jq -r '.files[].path' | grep "^$P/data/" > "$P/profile"
        [ "$(wc -l < "$P/profile")" = "$NFILES" ] ||
                fail "the launch profile has $(wc -l < "$P/profile") of the $NFILES files"
        step "launch recorded"
        ok "launch profile of $P/bin/prog: $NFILES files, $(discontinuities < "$P/profile") discontinuities in read order"
        # no more launches recorded: the checks' tools would be new profiles (and new profiles start runs)
        printf '[Record]\nMaxLaunchesPerBoot=0\n' > "$CONF/92-powercut-nolaunch.conf"
        systemctl restart seeklessd.service || fail "seeklessd did not restart"
        wait_for 60 eval 'seeklessctl status >/dev/null 2>&1' || fail "seeklessd is not on the bus"
        seeklessctl profiles
        profile_sums "$P/sums"
        step "sha256 of the profiles' files"
        ok "sha256 of the $(wc -l < "$P/sums") files of $(seeklessctl --json=short profiles | jq length) profiles"
        touch "$P/.ready"
        sync
        echo "setup: $((SECONDS - t0)) s"
}

phase_cut() {
        local a0 run id
        # (no launch recorded: the checks' tools would be new profiles, and new profiles start runs)
        printf '[Record]\nBootTailSec=5\nMaxLaunchesPerBoot=0\n[Idle]\nBootQuietSec=0\nIdleSec=5\nMaxLoadPerCPU=1000\nMaxIOPressure=100\nMaxQualityLossPercent=0\n' \
                > "$CONF/95-powercut-resume.conf"
        discontinuities < "$P/profile" > disc.before
        a0=$(unaccounted)
        step "blocks accounted"
        echo "$a0" > acct.before
        result acct_before "$a0"
        sync
        run=$(seeklessctl --json=short optimize --no-block) || fail "optimize --no-block: $run"
        echo "$run" > run.json
        id=$(jq -r .id <<<"$run")
        [ "$id" -gt 0 ] 2>/dev/null || fail "no run started: $run"
        result run "$id"
        step "armed"
        cp out.log "out.boot$n.log"     # the harness starts out.log afresh in the next boot
        touch armed
        sync -f armed           # the data disk only: nothing more is written to it before the cut
        console "POWERCUT-ARM run $id: $(jq -r '"\(.files) files, \(.bytes) bytes"' <<<"$run")"
        local t0=$SECONDS
        while optimizing; do sleep 2; done
        console "POWERCUT-NOTE: run $id ended $((SECONDS - t0)) s after the arm line, before the cut"
        sleep 600
        fail "no power cut came"
}

phase_verify() {
        local expect id pending total line a0 a1 d0 d1 i same bytes changed bad resumed_id=
        expect=$(sed -n 's/.*powercut\.expect=\([^ ]*\).*/\1/p' /proc/cmdline)
        echo "host: the database at the cut: ${expect:-unknown}"
        dmesg > dmesg.txt
        grep -E 'EXT4-fs \(vda\)|orphan' dmesg.txt | sed 's/^/kernel: /'
        grep -q 'EXT4-fs (vda): recovery complete' dmesg.txt || fail "the kernel did not replay the journal of /"
        ok "the kernel replayed the journal of / ($(grep -c 'EXT4-fs (vda): .*orphan' dmesg.txt) orphan line(s))"
        result replayed 1
        wait_for 120 boot_recording_over || fail "the boot window did not close"
        case $expect in
        resume:*)
                IFS=: read -r _ id pending total <<<"$expect"
                wait_for 300 eval 'journal | grep -q "^Resuming interrupted run $id on /:"' ||
                        { seeklessctl status; fail "run $id was not resumed"; }
                line=$(journal | grep -m1 "^Resuming interrupted run $id on /:")
                ok "$line"
                [[ $line == *": $pending of $total files still to do" ]] ||
                        fail "the resume disagrees with the database at the cut ($pending of $total pending)"
                result resumed "$pending/$total"
                wait_for 600 eval 'journal | grep -Eq "^Optimization $id (done|failed|cancelled)"' ||
                        fail "the resumed run $id did not finish"
                line=$(journal | grep -E "^Optimization $id (done|failed|cancelled)")
                [[ $line == "Optimization $id done"* ]] || fail "$line"
                ok "$line"
                resumed_id=$id
                ;;
        none|done:*|"")
                # nothing was left running: a run of our own does what is left
                journal | grep -q "^Resuming interrupted run" && [ "$expect" != "" ] &&
                        fail "a run was resumed that the database at the cut did not hold as running"
                # (the idle policy may start one first: then wait for it and ask again)
                for i in 1 2 3; do
                        wait_for 300 not_optimizing || fail "a run of the idle policy did not end"
                        line=$(seeklessctl optimize 2>&1) && break
                        optimizing || fail "optimize after the cut: $line"
                done
                ok "no run to resume; optimize: $(tail -n1 <<<"$line")"
                result resumed none
                ;;
        *)      fail "bad powercut.expect=$expect" ;;
        esac
        wait_for 120 not_optimizing || fail "still optimizing"
        step "the run is over"
        journal | grep -E "^(Optimization|Run|Resuming|Idle)" | sed 's/^/seeklessd: /'

        sync; echo 3 > /proc/sys/vm/drop_caches
        profile_sums sums.after
        step "sha256 of the profiles' files"
        # a file whose mtime and size are unchanged must have its old contents (MOVE_EXT keeps mtime)
        awk 'NR == FNR { old[$4] = $1 " " $2 " " $3; next }
             ($4 in old) { split(old[$4], o, " ");
                           if (o[2] == $2 && o[3] == $3) { n++; b += $3; if (o[1] != $1) { bad++; print "CORRUPT " $4 > "/dev/stderr" } }
                           else changed++ }
             END { printf "%d %d %d %d\n", n, b, changed, bad }' "$P/sums" sums.after > sums.cmp 2> corrupt.txt
        read -r same bytes changed bad < sums.cmp
        cat corrupt.txt
        result files_verified "$same"
        result bytes_verified "$bytes"
        result corrupt "$bad"
        [ "$bad" = 0 ] || fail "$bad file(s) with unchanged mtime and size have other contents"
        ok "sha256 of $same profile files ($bytes bytes) as at the setup; $changed rewritten since by their owners"
        a0=$(cat acct.before)
        a1=$(unaccounted)
        result acct_after "$a1"
        [ "$a1" = "$a0" ] || fail "blocks not accounted for: $a0 before the run, $a1 after (a leaked donor?)"
        ok "blocks accounted: $a1 in use outside any reachable inode, as before the run"
        d0=$(cat disc.before); d1=$(discontinuities < "$P/profile")
        result disc "$d0/$d1"
        [ "$d1" -lt "$d0" ] || fail "the launch profile is not less scattered: $d0 -> $d1 discontinuities"
        ok "launch profile: $d0 -> $d1 discontinuities in read order"
        seeklessctl status
        if [ -n "$resumed_id" ]; then
                # what moved after the cut is the resumed run's doing (the host counts blocks moved twice)
                line=$(journal | grep -E "^Optimization [0-9]+ started" | grep -v "^Optimization $resumed_id " || true)
                [ -z "$line" ] || fail "another run after the resumed one: $line"
                ok "no run but the resumed one in this boot"
        fi
        [ -z "$(systemctl --failed --no-legend --plain)" ] || fail "failed units: $(systemctl --failed --no-legend --plain)"
        ok "no failed units"
}

if [ ! -e armed ]; then
        [ -e "$P/.ready" ] || phase_setup
        [ "$(cat mode 2>/dev/null)" = setup ] && exit 0
        phase_cut
else
        phase_verify
fi
exit 0
