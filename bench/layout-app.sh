#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Layout benchmark of a real application installed from Debian's archive into a Debian root tree on an aged
# ext4 image: Chromium's headless cold start (APP=chromium, the default) or CPython importing a fixed set of
# stdlib modules (APP=python). See bench/README.md, section "Layout of a real application".
#
#   sudo bench/layout-app.sh [BUILD_DIR]        (default: build/)
#   sudo APP=python bench/layout-app.sh [BUILD_DIR]
#
# One aged image (a Debian root tree, free space cut into holes by fillers, the application and its dependencies
# installed into the holes, then "updated": fillers moved and the application's own packages reinstalled), then,
# each from the same aged bytes (cp --sparse=always):
#   aged          the image unchanged;
#   e4defrag      `e4defrag` of the files the start reads, in first-read order;
#   fresh         a new filesystem, the files the start reads copied first in first-read order, then the rest;
#   seekless      seeklessd records the start on the aged image, then `seeklessctl optimize` on a copy (today:
#                 whole files; mmap-only files are not recorded), with the default MaxFileMiB=512 and (Chromium) with
#                 128 (the default before, which leaves Chromium's binary, 267 MiB of it hot, where it is);
#                 APP=python runs it only when the profile has no ranges (with ranges it would be the next one);
#   ranges        the same once `seeklessctl show --json` gives files `ranges`; skipped with a message until then;
#   sequential    the bytes read / 150 MB/s (arithmetic).
# Measured for each: the daemon's model over the files the start reads, whole, in first-read order (layoutq),
# the same model over the page ranges the start brought into the page cache, in first-touch order
# (layoutq --ranges), and the start run cold RUNS times with the loop device's block_rq_issue events traced
# (trace-cost; the median run, also split into metadata and file-data requests). Also what the start
# reads: read() bytes and mmap()ed bytes per file (strace), and the pages it brought into the page cache per
# file (the page-cache tracepoint, build/bench/pagecache-bench).
# Exits 0 whatever the verdicts, 1 if something broke, 77 if not root.
#
# Knobs (environment): APP=chromium|python SEED=7 IMGSIZE=12G (python: 4G) RUNS=3 (cold runs per variant, the
# median by trace cost is kept)
# CACHE=/var/tmp/seekless-bench-app (downloaded .debs, the base tree if debootstrapped; kept between runs)
# ROOTFS=DIR (a Debian 12 root tree to start from; default: CACHE/rootfs, debootstrapped once if missing)
# KEEP=1 keeps the scratch directory.

set -euo pipefail

SEED=${SEED:-7}
RUNS=${RUNS:-3}
KEEP=${KEEP:-0}
CACHE=${CACHE:-/var/tmp/seekless-bench-app}
ROOTFS=${ROOTFS:-$CACHE/rootfs}
APP=${APP:-chromium}
TRANSFER_BPS=150000000
# the Python launch imports these stdlib modules (Debian 12's python3.11 without recommends: no tkinter,
# distutils, lib2to3, ensurepip, dbm.gnu; none that act on import); -B: no .pyc written into the tree
PY_MODULES="argparse ast asyncio base64 bdb bisect bz2 calendar cmath cmd code codeop collections colorsys
compileall concurrent.futures configparser contextlib contextvars copy cProfile csv ctypes curses dataclasses
datetime dbm decimal difflib dis doctest email email.mime.multipart email.mime.text email.parser email.policy
encodings.idna enum filecmp fileinput fnmatch fractions ftplib getopt getpass gettext glob graphlib gzip hashlib
heapq hmac html html.parser http.client http.cookiejar http.cookies http.server imaplib importlib.metadata
importlib.resources inspect ipaddress json json.tool linecache locale logging logging.config logging.handlers
lzma mailbox mimetypes multiprocessing multiprocessing.pool netrc numbers optparse pathlib pdb pickle
pickletools pkgutil platform plistlib poplib pprint profile pstats pty py_compile pydoc queue quopri random re
readline reprlib rlcompleter runpy sched secrets selectors shelve shlex shutil smtplib socket socketserver
sqlite3 ssl statistics string stringprep struct subprocess symtable sysconfig tabnanny tarfile tempfile textwrap
threading timeit tokenize tomllib trace traceback tracemalloc typing unicodedata unittest unittest.mock
urllib.parse urllib.request uuid warnings wave weakref webbrowser wsgiref.simple_server xml.dom.minidom
xml.etree.ElementTree xml.sax xmlrpc.client xmlrpc.server zipapp zipfile zipimport zoneinfo"
# per application: the package apt installs, the binary the launch is recorded under, the packages the "update"
# reinstalls, the default image size (the daemon's hot set is capped at 5 % of the filesystem), the start (it
# must print seekless-bench-done), the whole-file seekless variants, a title
case $APP in
chromium)
        APP_PKG=chromium APP_BIN=usr/lib/chromium/chromium APP_UPDATE=(chromium chromium-common) IMGSIZE=${IMGSIZE:-12G}
        # Chromium headless dumping the DOM of a local page; its own wrapper (/usr/bin/chromium) is skipped so
        # that the launch is recorded under the binary itself
        START=("/$APP_BIN" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=/tmp/prof
               --disable-dev-shm-usage --dump-dom file:///opt/seekless-bench/page.html)
        WHOLE_VARIANTS=(seekless seekless-128) TITLE="headless cold start" ;;
python)
        APP_PKG=python3 APP_BIN=usr/bin/python3.11 IMGSIZE=${IMGSIZE:-4G}
        APP_UPDATE=(python3.11 python3.11-minimal libpython3.11-stdlib libpython3.11-minimal)
        # python3.11 itself, not the python3 symlink: the read set keeps regular files only
        START=("/$APP_BIN" -B -c "import $(echo $PY_MODULES | tr ' ' ','); print('seekless-bench-' + 'done')")
        WHOLE_VARIANTS=(seekless) TITLE="cold start importing $(wc -w <<< "$PY_MODULES") stdlib modules" ;;
*)
        echo "ERROR: APP=$APP: chromium or python" >&2; exit 1 ;;
esac
# files of every start that the interpreter or libc only map: is each in the read set, the page cache, the profile?
MAPPED_CHECK=(etc/ld.so.cache usr/lib/x86_64-linux-gnu/libc.so.6 usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
              usr/lib/locale/C.utf8/LC_CTYPE usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache)

. "$(dirname "$0")/lib.sh"
bench_init layout-app cc mkfs.ext4 e2fsck e2freefrag losetup dbus-daemon busctl jq e4defrag filefrag apt-get dpkg \
        strace unshare chroot fallocate -- "$@"
bench_binaries daemon/seeklessd cli/seeklessctl bench/pagecache-bench
PCBENCH=${BIN[pagecache-bench]}
CHROOT=$(command -v chroot)
export CHROOT

# (the same device mounted again read-write just after a read-only mount: a start's private mount namespace can
# still hold the old mount for a moment after the start exits, and mount says "already mounted": retried for 10 s)
mount_retry() {     # DEV DIR [OPTIONS]
        mkdir -p "$2"
        wait_until 10 mount -t ext4 ${3:+-o "$3"} "$1" "$2" || die "mount $1 $2 (tried for 10 s)"
        CORE_MOUNTS+=("$2")
}
mkimg() { make_ext4_image "$1" "$IMGSIZE"; }
fsck_img() { e2fsck -fn "$1" > "$TMP/fsck.out" 2>&1 || { cat "$TMP/fsck.out"; die "e2fsck -fn found problems ($2)"; }; }

# The start of a private mount namespace's script (r: the root to chroot to): first detach every mount it
# copied but /, what leads to r, to /usr/bin and to $DEBDIR (lazily, /proc last: umount reads it). A copy
# of another suite's scratch mount would keep that filesystem mounted here after the suite unmounted it
# (and e2fsck would then see a filesystem still in use).
DETACH_OTHERS='for m in $(awk "{ print \$5 }" /proc/self/mountinfo | sort -r); do
                        case $m in /|/proc) continue ;; esac
                        for k in "$r" /usr/bin ${DEBDIR:+"$DEBDIR"}; do case $k/ in "$m"/*) continue 2 ;; esac; done
                        umount -l "$m" 2>/dev/null || true
                done; umount -l /proc;'

# in_root ROOT CMD...: CMD in a chroot to ROOT, in a private mount namespace holding /proc, /sys, /tmp and
# /dev/shm of its own and none of the caller's mounts but the root's (all gone when it exits; nothing is
# mounted in the caller's namespace)
in_root() {
        local root=$1; shift
        unshare --mount --propagation private -- /bin/sh -c '
                r=$1; shift
                '"$DETACH_OTHERS"'
                mount -t proc proc "$r/proc" && mount -t sysfs -o ro sysfs "$r/sys" &&
                mount -t tmpfs -o mode=1777 tmpfs "$r/tmp" && mkdir -p "$r/tmp/shm" &&
                { [ -d "$r/dev/shm" ] || mkdir "$r/dev/shm" 2>/dev/null || true; } &&
                { [ ! -d "$r/dev/shm" ] || mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"; } &&
                { [ -z "$DEBDIR" ] || { mkdir -p "$r/tmp/debs" && mount --bind -o ro "$DEBDIR" "$r/tmp/debs"; }; } || exit 111
                exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$CHROOT" "$r" "$@"
        ' in_root "$root" "$@"
}

run_start() {       # ROOT [WRAPPER...]: the start, cold, in ROOT; output in $TMP/start.out
        local root=$1; shift
        timeout 300 "$@" unshare --mount --propagation private -- /bin/sh -c '
                r=$1; shift
                '"$DETACH_OTHERS"'
                mount -t proc proc "$r/proc" && mount -t sysfs -o ro sysfs "$r/sys" &&
                mount -t tmpfs -o mode=1777 tmpfs "$r/tmp" && mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm" || exit 111
                exec env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 "$CHROOT" "$r" "$@"
        ' run_start "$root" "${START[@]}" > "$TMP/start.out" 2> "$TMP/start.err"
}
start_ok() { grep -q 'seekless-bench-done' "$TMP/start.out"; }

# ------------------------------------------------------------------------------------------------ setup
log "seekless layout benchmark, real application ($APP_PKG): $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPU(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$CACHE/debs/partial"
log "$(bench_source); seeklessd sha256 $(sha256sum "$SEEKLESSD" | cut -c1-12); scratch $TMP; cache $CACHE"
bench_cc layoutq bench/layoutq.c daemon/plan/layout.c daemon/fs/fiemap.c
bench_cc trace-cost bench/trace-cost.c daemon/plan/layout.c

# the base tree: ROOTFS, or debootstrapped once into the cache (minbase plus systemd and dbus, as the test VM's
# tests/vm/mk-rootfs-base.sh: Chromium's dependencies pull in libpam-systemd, whose configuration needs them)
# from the host's apt mirror (tests/vm/apt-mirror.sh)
BASE_PKGS=systemd,systemd-sysv,dbus
MIRROR=$("$SRC/tests/vm/apt-mirror.sh" bookworm 2>/dev/null || true)
if [ ! -x "$ROOTFS/usr/bin/dpkg" ] ||
   { [ "$ROOTFS" = "$CACHE/rootfs" ] && [ "$(cat "$ROOTFS/.seekless-bench" 2>/dev/null)" != "bookworm minbase $BASE_PKGS" ]; }; then
        [ "$ROOTFS" = "$CACHE/rootfs" ] || die "ROOTFS=$ROOTFS is not a Debian tree"
        [ -n "$MIRROR" ] || die "no Debian mirror for bookworm in /etc/apt/sources.list*"
        command -v debootstrap >/dev/null || die "debootstrap is needed to make the base tree (or give ROOTFS=)"
        log "debootstrap --variant=minbase --include=$BASE_PKGS bookworm into $ROOTFS from $MIRROR (once; cached)"
        rm -rf "$ROOTFS.new" "$ROOTFS"
        debootstrap --variant=minbase --include="$BASE_PKGS" bookworm "$ROOTFS.new" "$MIRROR" > "$TMP/debootstrap.log" 2>&1 ||
                { tail "$TMP/debootstrap.log"; die "debootstrap failed"; }
        echo "bookworm minbase $BASE_PKGS" > "$ROOTFS.new/.seekless-bench"
        mv "$ROOTFS.new" "$ROOTFS"
fi
log "base tree: $ROOTFS ($(du -sm "$ROOTFS" | cut -f1) MiB); apt sources: the host's (${MIRROR:-?} first)"

# the packages: what the base tree lacks for $APP_PKG (no recommends), from the host's apt sources and lists,
# downloaded once into CACHE/debs
APT=(apt-get -q -o "Dir::State::status=$ROOTFS/var/lib/dpkg/status" -o APT::Install-Recommends=0
     -o "Dir::Cache::archives=$CACHE/debs")
"${APT[@]}" -s install "$APP_PKG" > "$TMP/apt-sim.txt" 2>&1 || { cat "$TMP/apt-sim.txt"; die "apt-get cannot resolve $APP_PKG"; }
# "Inst NAME [OLD] (VERSION SUITE [ARCH]) [...]" -> NAME_VERSION_ARCH.deb, the epoch's colon as %3a (apt's file name)
mapfile -t DEBS < <(sed -n 's/^Inst \([^ ]*\) \(\[[^]]*\] \)\{0,1\}(\([^ ]*\) [^[]*\[\([^]]*\)\]).*/\1_\3_\4.deb/p' "$TMP/apt-sim.txt" |
        sed 's/:/%3a/g')
[ "${#DEBS[@]}" -ge 1 ] || die "no packages to install"
missing=0
for d in "${DEBS[@]}"; do [ -s "$CACHE/debs/$d" ] || missing=$((missing + 1)); done
if [ "$missing" -gt 0 ]; then
        log "downloading $missing of ${#DEBS[@]} packages into $CACHE/debs"
        "${APT[@]}" -y --download-only install "$APP_PKG" > "$TMP/apt-dl.txt" 2>&1 || { tail "$TMP/apt-dl.txt"; die "download failed"; }
fi
for d in "${DEBS[@]}"; do [ -s "$CACHE/debs/$d" ] || die "$CACHE/debs/$d missing after the download"; done
APP_VER=$(printf '%s\n' "${DEBS[@]}" | sed -n "s/^${APP_PKG}_\([^_]*\)_.*/\1/p" | sed 's/%3a/:/')
DEB_MIB=$(cd "$CACHE/debs" && du -cm "${DEBS[@]}" | tail -n1 | cut -f1)
log "packages: ${#DEBS[@]} (${DEB_MIB} MiB of .debs), $APP_PKG $APP_VER"
mkdir -p "$TMP/debs"
for d in "${DEBS[@]}"; do ln "$CACHE/debs/$d" "$TMP/debs/$d" 2>/dev/null || cp "$CACHE/debs/$d" "$TMP/debs/$d"; done
APP_DEBS=()
for d in "${DEBS[@]}"; do for u in "${APP_UPDATE[@]}"; do case $d in "$u"_*) APP_DEBS+=("/tmp/debs/$d") ;; esac; done; done
[ "${#APP_DEBS[@]}" = "${#APP_UPDATE[@]}" ] || die "the update's packages (${APP_UPDATE[*]}) are not all among the ones to install"

# tracefs instance, private bus, daemon config (as bench/layout.sh)
trace_setup 65536
start_bus
printf '[Record]\nRecorder='"${RECORDER:-fanotify}"'\nBootWindowSec=1\nLaunchWindowSec=20\n[Optimize]\nMinFileAgeSec=0\n' > "$TMP/seekless.conf"
printf '[Record]\nRecorder='"${RECORDER:-fanotify}"'\nBootWindowSec=1\nLaunchWindowSec=20\n[Optimize]\nMinFileAgeSec=0\nMaxFileMiB=128\n' > "$TMP/seekless-128.conf"

# ----------------------------------------------------------------------------------------- the aged image
# 1. the base tree on a fresh filesystem; 2. free space cut into holes: fallocated fillers of 64 KiB-2 MiB
# until 3 % is left, a seeded half deleted; 3. the packages installed (dpkg -i) into the holes; 4. an update:
# the free space filled again the same way and a seeded half of the new fillers deleted, then the application's
# own packages (APP_UPDATE) reinstalled (dpkg writes every file anew: new blocks wherever the holes are).
MNT=$TMP/mnt
fill() {            # DIR PREFIX STOP_AT_FREE_PERCENT: fallocated fillers of seeded sizes until free space is below the mark -> NFILL
        local dir=$1 pre=$2 pct=$3 n=0 total free kib
        total=$(df -B1 --output=size "$MNT" | tail -n1)
        mkdir -p "$dir"
        while :; do
                free=$(df -B1 --output=avail "$MNT" | tail -n1)
                ((free * 100 > total * pct)) || break
                for _ in $(seq 64); do
                        kib=$(( (1 + RANDOM % 32) * 64 ))
                        fallocate -l "${kib}KiB" "$dir/$pre$n" 2>/dev/null || break 2
                        n=$((n + 1))
                done
        done
        NFILL=$n
}
thin() {            # DIR: delete a seeded half of the files in DIR -> NTHIN (no subshell: RANDOM stays seeded)
        local f n=0
        for f in "$1"/*; do if ((RANDOM % 2)); then rm -f "$f"; n=$((n + 1)); fi; done
        NTHIN=$n
}
t_age=$(now)
mkimg "$TMP/aged.img"
attach "$TMP/aged.img"; LOOP=$ATTACHED
mount_retry "$LOOP" "$MNT"
RANDOM=$SEED
cp -a "$ROOTFS/." "$MNT/"
printf '#!/bin/sh\nexit 101\n' > "$MNT/usr/sbin/policy-rc.d"; chmod 755 "$MNT/usr/sbin/policy-rc.d"
if [ "$APP" = chromium ]; then
        mkdir -p "$MNT/opt/seekless-bench"
        {
                echo '<!DOCTYPE html><html><head><title>seekless</title><style>p { font: 14px serif }</style></head><body>'
                echo '<h1>seekless bench</h1><svg width="100" height="100"><circle cx="50" cy="50" r="40" fill="teal"/></svg>'
                for i in $(seq 200); do echo "<p>line $i: the quick brown fox jumps over the lazy dog</p>"; done
                echo '<script>document.body.appendChild(document.createElement("p")).textContent = "seekless-bench-" + "done";</script>'
                echo '</body></html>'
        } > "$MNT/opt/seekless-bench/page.html"
fi
sync
fill "$MNT/.age/a" a 3; n1=$NFILL; sync
thin "$MNT/.age/a"; d1=$NTHIN; sync
log "aging: base tree copied; $n1 fillers of 64 KiB-2 MiB (fallocated) filled the free space, $d1 deleted; free $(df -h --output=avail "$MNT" | tail -n1 | tr -d ' ')"
t0=$(now)
DEBDIR="$TMP/debs" in_root "$MNT" dpkg -R -i /tmp/debs > "$TMP/dpkg1.log" 2>&1 || true
DEBDIR="$TMP/debs" in_root "$MNT" dpkg --configure -a >> "$TMP/dpkg1.log" 2>&1 || { tail -n 30 "$TMP/dpkg1.log"; die "dpkg failed"; }
DEBDIR= in_root "$MNT" dpkg -s "$APP_PKG" > /dev/null 2>&1 || { tail -n 30 "$TMP/dpkg1.log"; die "$APP_PKG not installed"; }
sync
log "aging: ${#DEBS[@]} packages installed in $(elapsed "$t0" "$(now)") s"
fill "$MNT/.age/b" b 3; n2=$NFILL; sync
thin "$MNT/.age/b"; d2=$NTHIN; sync
t0=$(now)
DEBDIR="$TMP/debs" in_root "$MNT" dpkg -i "${APP_DEBS[@]}" > "$TMP/dpkg2.log" 2>&1 || { tail -n 30 "$TMP/dpkg2.log"; die "reinstall failed"; }
sync
log "aging: update: $n2 new fillers filled the free space again, $d2 of them deleted, ${APP_DEBS[*]##*/} reinstalled in $(elapsed "$t0" "$(now)") s"
rm -f "$MNT/usr/sbin/policy-rc.d"
APP_SIZE=$(stat -c %s "$MNT/$APP_BIN")
APP_FRAG=$(filefrag "$MNT/$APP_BIN" | awk '{ print $(NF - 2) }')
log "aged in $(elapsed "$t_age" "$(now)") s: /$APP_BIN $(stat -c %s "$MNT/$APP_BIN") bytes in $APP_FRAG extents; used $(df -h --output=used "$MNT" | tail -n1 | tr -d ' ')"
do_umount "$MNT"
fsck_img "$LOOP" "aged image"
FREEFRAG=$(e2freefrag "$LOOP" | awk '/^Free blocks:/ { f = $3 " blocks " $4 } /^Avg. free extent:/ { a = $4 " " $5 } /^Max. free extent:/ { m = $4 " " $5 }
        /^Num. free extent:/ { n = $4 } END { printf "free %s in %s extents, average %s, largest %s", f, n, a, m }')
log "aged image: $FREEFRAG (e2freefrag)"

# ------------------------------------------------------------------- what the start reads (aged image)
mount_retry "$LOOP" "$MNT" ro
cold
run_start "$MNT" || true
start_ok || { cat "$TMP/start.err" | tail -n 20; die "the start did not print its page on the aged image"; }
log "the start works: $(wc -c < "$TMP/start.out") bytes of output"

# strace: per file (paths inside the tree), first-use time, read()/pread() bytes, bytes mapped, exec
cold
run_start "$MNT" strace -f -ff -ttt -y -qq -e signal=none -e trace=execve,read,pread64,readv,mmap -o "$TMP/st" || true
start_ok || die "the start failed under strace"
cat "$TMP"/st.* | awk -v r="$MNT" '
        function path(s,   p) { if (match(s, /<[^>]*>/)) { p = substr(s, RSTART + 1, RLENGTH - 2); return p } return "" }
        function note(p, t) { if (index(p, r "/") != 1) return ""; p = substr(p, length(r) + 1);
                if (p ~ /^\/(proc|sys|tmp|dev)\//) return ""; if (!(p in first) || t < first[p]) first[p] = t; return p }
        / (read|pread64|readv)\(/ { n = $NF; if (n !~ /^[0-9]+$/) next; p = note(path($0), $1); if (p != "") rd[p] += n; next }
        / mmap\(/ { split($0, a, ", "); if (a[5] !~ /</) next; p = note(path(a[5]), $1); if (p != "") mm[p] += a[2]; next }
        / execve\(/ && $NF == 0 && !/execve\("(\/usr\/bin\/unshare|\/bin\/sh|\/usr\/sbin\/chroot|\/usr\/bin\/env)"/ { match($0, /execve\("[^"]*"/); p = substr($0, RSTART + 8, RLENGTH - 9); p = note(r p, $1); if (p != "") ex[p] = 1 }
        END { for (p in first) printf "%s\t%s\t%d\t%d\t%d\n", first[p], p, rd[p], mm[p], ex[p] }' |
        sort -n | cut -f2- > "$TMP/readset.tsv"
rm -f "$TMP"/st.*
mapfile -t READSET < <(cut -f1 "$TMP/readset.tsv" | sed 's|^/||' | while read -r p; do [ -f "$MNT/$p" ] && [ ! -L "$MNT/$p" ] && echo "$p"; done)
[ "${#READSET[@]}" -ge 2 ] || die "the read set is too short"
RS_BYTES=0; for p in "${READSET[@]}"; do RS_BYTES=$((RS_BYTES + $(stat -c %s "$MNT/$p"))); done
read -r RD_BYTES MM_BYTES RD_FILES MM_ONLY <<< "$(awk -F'\t' '{ r += $2; m += $3; if ($2 > 0) nr++; if ($2 == 0 && ($3 > 0 || $4)) mo++ } END { print r + 0, m + 0, nr + 0, mo + 0 }' "$TMP/readset.tsv")"
log "read set: ${#READSET[@]} files, $(mib "$RS_BYTES") MiB (whole); read() $(mib "$RD_BYTES") MiB from $RD_FILES files; mmap() $(mib "$MM_BYTES") MiB mapped; $MM_ONLY files only mapped or exec'd"

# page-cache tracepoint: pages each file brought in during a cold start
cold
"$PCBENCH" trace --print --metadata --buffer-kib=8192 --poll-percent=25 "$MNT" > "$TMP/pages.txt" 2> "$TMP/pages.err" &
PC_PID=$!
BENCH_PIDS+=("$PC_PID")
sleep 1
run_start "$MNT" || true
sleep 1
kill -TERM "$PC_PID"; wait "$PC_PID" || true
for p in "${READSET[@]}"; do printf '%s\t%s\t%s\n' "$(stat -c %i "$MNT/$p")" "$p" "$(stat -c %s "$MNT/$p")"; done > "$TMP/inodes.tsv"
awk 'NR == FNR { name[$1] = $2; next } { split($3, d, ":"); ino = $4; pages[ino] += $NF; if (ino == 0) meta += $NF }
     END { for (i in pages) if (i != 0) printf "%s\t%d\n", (i in name) ? name[i] : "inode " i, pages[i] * 4096; printf "(metadata)\t%d\n", meta * 4096 }' \
        "$TMP/inodes.tsv" "$TMP/pages.txt" | sort -t$'\t' -k2,2nr > "$TMP/pagebytes.tsv"
PC_TOTAL=$(awk -F'\t' '{ s += $2 } END { print s + 0 }' "$TMP/pagebytes.tsv")
# the page ranges of the read set's files in first-touch order: a page already seen (inserted again after
# eviction) is dropped, a page continuing the file's latest range extends it, any other starts a new one
# (pages of files outside the read set and metadata are left out)
sort -n -k1,1 "$TMP/pages.txt" | awk -F'[ \t]' 'NR == FNR { name[$1] = $2; next }
        ($4 in name) { ino = $4
                for (p = $5; p < $5 + $6; p++) {
                        if ((ino, p) in seen) { again++; continue }
                        seen[ino, p] = 1
                        if ((ino in last) && last[ino] == p) len[cur[ino]]++
                        else { k++; rp[k] = name[ino]; off[k] = p; len[k] = 1; cur[ino] = k }
                        last[ino] = p + 1
                } }
        END { for (i = 1; i <= k; i++) printf "%s\t%d\t%d\n", rp[i], off[i] * 4096, len[i] * 4096
              printf "%d\n", again > "/dev/stderr" }' "$TMP/inodes.tsv" - > "$TMP/ranges.tsv" 2> "$TMP/again.txt"
[ -s "$TMP/ranges.tsv" ] || die "no page ranges of the read set were recorded"
AGAIN=$(cat "$TMP/again.txt")
log "page ranges: $(wc -l < "$TMP/ranges.tsv") ranges of $(cut -f1 "$TMP/ranges.tsv" | sort -u | wc -l) files, $(mib "$(awk -F'\t' '{ s += $3 } END { print s }' "$TMP/ranges.tsv")") MiB;" \
        "$(mib $((AGAIN * 4096))) MiB of pages inserted again (evicted during the start) left out"
log "page cache: $(mib "$PC_TOTAL") MiB inserted during the start ($(tail -n1 "$TMP/pages.err"))"
do_umount "$MNT"

# --------------------------------------------------------------- the profile, recorded on the aged image
# (read-write: seeklessd watches only writable ext4; the start writes only to its tmpfs /tmp)
mount_retry "$LOOP" "$MNT"
start_seekless "$TMP/seekless.conf" "$TMP/state" "$MNT"
cold
run_start "$MNT" || true
start_ok || die "the start failed while recorded"
wait_until 90 has_profile "$MNT/$APP_BIN" || die "launch of $MNT/$APP_BIN not recorded"
"$SEEKLESSCTL" --json=short show "$MNT/$APP_BIN" > "$TMP/profile.json"
mapfile -t PROFILE < <(jq -r '.files[].path' "$TMP/profile.json" | sed "s|^$MNT/||")
# ranges: some file of the profile has hot ranges other than one whole-file range (a file counted whole has one,
# offset 0, length its size)
HAS_RANGES=$(jq -r '[.files[] | select(has("ranges")) | select((.ranges | length) != 1 or .ranges[0].offset != 0 or
        .ranges[0].length != .size)] | length > 0' "$TMP/profile.json")
PROF_BYTES=0; for p in "${PROFILE[@]}"; do PROF_BYTES=$((PROF_BYTES + $(stat -c %s "$MNT/$p" 2>/dev/null || echo 0))); done
IN_RS=$(comm -12 <(printf '%s\n' "${PROFILE[@]}" | sort) <(printf '%s\n' "${READSET[@]}" | sort) | wc -l)
HOT_BYTES=$(jq '[.files[] | if has("ranges") then ([.ranges[].length] | add // 0) else .size end] | add // 0' "$TMP/profile.json")
log "profile: ${#PROFILE[@]} files, $(mib "$PROF_BYTES") MiB whole, $(mib "$HOT_BYTES") MiB hot; $IN_RS of the read set's ${#READSET[@]}; ranges: $HAS_RANGES"
# the read set's files the profile lacks, largest first, and the profile's files outside the read set
NOT_REC=$(comm -23 <(printf '%s\n' "${READSET[@]}" | sort) <(printf '%s\n' "${PROFILE[@]}" | sort) |
        while read -r p; do printf '%s %s\n' "$(stat -c %s "$MNT/$p")" "$p"; done | sort -nr |
        awk '{ n++; b += $1; if (n <= 6) l = l sprintf(" %s (%.1f MiB)", $2, $1 / 1048576) } END { printf "%d files, %.1f MiB:%s", n, b / 1048576, l }')
NOT_RS=$(comm -13 <(printf '%s\n' "${READSET[@]}" | sort) <(printf '%s\n' "${PROFILE[@]}" | sort) | tr '\n' ' ')
log "  not recorded: $NOT_REC; recorded outside the read set: ${NOT_RS:-none}"
MAPPED_LINES=()
for p in "${MAPPED_CHECK[@]}"; do
        if [ ! -f "$MNT/$p" ]; then MAPPED_LINES+=("  /$p: not in the tree"); continue; fi
        ino=$(stat -c %i "$MNT/$p")
        rs=$(awk -F'\t' -v p="/$p" '$1 == p { printf "yes (%d / %d)", $2, $3; f = 1 } END { if (!f) printf "no" }' "$TMP/readset.tsv")
        pc=$(awk -F'[ \t]' -v i="$ino" '$4 == i { n += $NF } END { print n * 4096 }' "$TMP/pages.txt")
        pr=$(jq -r --arg p "$MNT/$p" '[.files[] | select(.path == $p) | if has("ranges") then ([.ranges[].length] | add // 0) else .size end]
                | if length == 0 then "NO" else "yes (\(.[0]))" end' "$TMP/profile.json")
        MAPPED_LINES+=("  /$p: read set $rs; page cache $pc; profile $pr")
done
printf '%s\n' "${MAPPED_LINES[@]}"
stop_seekless
do_umount "$MNT"
detach "$LOOP"

# ------------------------------------------------------------------------------------------- variants
log "e4defrag: the read set on a byte copy, in first-read order"
cp --sparse=always "$TMP/aged.img" "$TMP/e4defrag.img"
attach "$TMP/e4defrag.img"; LOOP=$ATTACHED
mount_retry "$LOOP" "$MNT"
t0=$(now)
(cd "$MNT" && e4defrag "${READSET[@]}") > "$TMP/e4defrag.out" 2>&1 || true
sync
E4_SECS=$(elapsed "$t0" "$(now)")
log "  $(grep -c Success "$TMP/e4defrag.out" || true) of ${#READSET[@]} files reported success, $E4_SECS s"
do_umount "$MNT"
fsck_img "$LOOP" "e4defrag"
detach "$LOOP"

log "fresh copy: new filesystem, the read set first in first-read order (each synced), then cp -a -n of the rest (fillers left out)"
mkimg "$TMP/fresh.img"
attach "$TMP/aged.img"; SLOOP=$ATTACHED
mount_retry "$SLOOP" "$TMP/src" ro
attach "$TMP/fresh.img"; LOOP=$ATTACHED
mount_retry "$LOOP" "$MNT"
t0=$(now)
copy_in_order "$TMP/src" "$MNT" "${READSET[@]}"
(cd "$TMP/src" && find . -xdev -mindepth 1 -maxdepth 1 ! -name .age ! -name lost+found -exec cp -a -n {} "$MNT/" \;)
sync
log "  copied in $(elapsed "$t0" "$(now)") s"
do_umount "$MNT"
fsck_img "$LOOP" "fresh copy"
detach "$LOOP"
do_umount "$TMP/src"
detach "$SLOOP"

relocate() {        # VARIANT [CONFIG]: seeklessd on a byte copy with a copy of the recorded state, optimize
        local v=$1 l secs conf=${2:-$TMP/seekless.conf}
        cp --sparse=always "$TMP/aged.img" "$TMP/$v.img"
        cp -a "$TMP/state" "$TMP/state-$v"
        attach "$TMP/$v.img"; l=$ATTACHED
        mount_retry "$l" "$MNT"
        start_seekless "$conf" "$TMP/state-$v" "$MNT"
        cold
        t0=$(now)
        "$SEEKLESSCTL" --json=short optimize > "$TMP/opt-$v.json" || die "seeklessctl optimize failed: $(cat "$TMP/opt-$v.json")"
        secs=$(elapsed "$t0" "$(now)")
        log "  $v: moved $(jq -r .moved_files "$TMP/opt-$v.json") files, $(mib "$(jq -r .moved_bytes "$TMP/opt-$v.json")") MiB in $secs s;" \
                "skipped $(jq -r '.skipped | length' "$TMP/opt-$v.json")"
        jq -r '.skipped[] | "    skipped: \(.)"' "$TMP/opt-$v.json" 2>/dev/null | head -n 5
        "$SEEKLESSCTL" --json=short report "$MNT/$APP_BIN" > "$TMP/report-$v.json" 2>&1 || true
        stop_seekless
        do_umount "$MNT"
        fsck_img "$l" "$v"
        detach "$l"
}
VARIANTS=(aged e4defrag fresh)
# APP=python: with ranges in the profile the whole-file variant would run the same daemon on the same profile as
# "ranges" (no whole-file mode to select): left out
[ "$APP" = python ] && [ "$HAS_RANGES" = true ] && WHOLE_VARIANTS=()
for v in "${WHOLE_VARIANTS[@]}"; do
        case $v in
        seekless)
                log "seekless whole-file: seeklessctl optimize on a byte copy"
                relocate seekless ;;
        seekless-128)
                log "seekless with MaxFileMiB=128 (the default before 512; it skips Chromium's binary): seeklessctl optimize on a byte copy"
                relocate seekless-128 "$TMP/seekless-128.conf" ;;
        esac
        VARIANTS+=("$v")
done
if [ "$HAS_RANGES" = true ]; then
        log "seekless ranges: the profile has page ranges; seeklessctl optimize on a byte copy"
        [ "${#WHOLE_VARIANTS[@]}" = 0 ] ||
                log "  NOTE: the 'seekless' columns ran the same daemon on the same profile: they are whole-file only if" \
                        "this build still relocates whole files when a profile has ranges (compare their moved bytes)"
        relocate ranges
        VARIANTS+=(ranges)
else
        log "seekless ranges: SKIPPED: seeklessctl show --json gives no file hot ranges other than whole files (page-range recording not in this build, or it saw none)"
fi

# ------------------------------------------------------------------------------------------- measure
# one trace's cost as a JSON object: FILE MAJ MIN DEVICE_BYTES [data|meta] (meta: the requests ext4 marks REQ_META,
# inode tables, directories and extent blocks: an M in the rwbs field; data: the rest)
cost() {
        case ${5:-} in
        meta) { grep -E 'block_rq_issue: [0-9]+,[0-9]+ [A-Z]*M' "$1" || true; } | "$TMP/trace-cost" "$2" "$3" "$4" ;;
        data) { grep -vE 'block_rq_issue: [0-9]+,[0-9]+ [A-Z]*M' "$1" || true; } | "$TMP/trace-cost" "$2" "$3" "$4" ;;
        *) "$TMP/trace-cost" "$2" "$3" "$4" < "$1" ;;
        esac
}
measure() {         # VARIANT
        local v=$1 l dir=$TMP/m-$1 maj min dev q r t i w rstart
        attach "$TMP/$v.img"; l=$ATTACHED
        mount_retry "$l" "$dir" ro
        q=$(cd "$dir" && "$TMP/layoutq" "${READSET[@]}") || die "layoutq failed on $v"
        r=$(cd "$dir" && "$TMP/layoutq" --ranges < "$TMP/ranges.tsv") || die "layoutq --ranges failed on $v"
        result_with "$q" measure files variant "$v"
        result_with "$r" measure ranges variant "$v"
        dev=$(jv device_bytes "$q")
        maj=$((16#$(stat -c %t "$l"))) min=$((16#$(stat -c %T "$l")))
        for ((i = 1; i <= RUNS; i++)); do
                trace_dev "$l"
                cold
                rstart=$(now)
                trace_run "$TMP/trace-$v-$i.txt" run_start "$dir" || true
                w=$(awk -v a="$rstart" -v b="$(now)" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
                trace_undev
                start_ok || die "the start failed on $v"
                trace_lost "$TMP/trace-$v-$i.txt" "$v"
                t=$(cost "$TMP/trace-$v-$i.txt" "$maj" "$min" "$dev")
                log "  $v run $i: $t; wall $w ms"
                result_with "$t" measure run-trace variant "$v" run "$i" wall_ms "$w"
                echo "$(jv modeled_ms "$t") $i" >> "$TMP/runs-$v.txt"
        done
        # the median run by modeled trace time, and its requests split into metadata and file data, each costed alone
        read -r _ i <<< "$(sort -n "$TMP/runs-$v.txt" | sed -n "$(( (RUNS + 1) / 2 ))p")"
        result measure median-run variant "$v" run "$i"
        result_with "$(cost "$TMP/trace-$v-$i.txt" "$maj" "$min" "$dev" meta)" measure trace-meta variant "$v"
        result_with "$(cost "$TMP/trace-$v-$i.txt" "$maj" "$min" "$dev" data)" measure trace-data variant "$v"
        log "  $v: whole files: $q"
        log "  $v: page ranges: $r"
        do_umount "$dir"
        detach "$l"
}
log "measuring: layoutq over the read set in first-read order; the start cold with block_rq_issue traced ($RUNS run(s) each)"
for v in "${VARIANTS[@]}"; do measure "$v"; done

# ------------------------------------------------------------------------------------------- summary
for l in "${MAPPED_LINES[@]}"; do result measure mapped line "$l"; done
head -n 12 "$TMP/pagebytes.tsv" | while IFS=$'\t' read -r p b; do
        whole=$(awk -F'\t' -v p="$p" '$2 == p { print $3 }' "$TMP/inodes.tsv")
        rm_=$(awk -F'\t' -v p="/$p" '$1 == p { printf "%.1f / %.1f", $2 / 1048576, $3 / 1048576 }' "$TMP/readset.tsv")
        result measure page-bytes path "$p" bytes "$b" whole "${whole:-0}" read_mmap_mib "${rm_:--}"
done
for v in "${VARIANTS[@]:3}"; do
        result measure report variant "$v" report "$(jq -c '.[0] | {now: .modeled_read_ms, before: .before.modeled_read_ms}' \
                "$TMP/report-$v.json" 2>/dev/null || head -c 200 "$TMP/report-$v.json" 2>/dev/null)"
done
result measure run app "$APP" title "$APP_PKG $APP_VER $TITLE" date "$(date -u '+%Y-%m-%d %H:%M UTC')" kernel "$(uname -r)" \
        cpus "$(nproc)" load "$(cut -d' ' -f1-3 /proc/loadavg)" seed "$SEED" imgsize "$IMGSIZE" runs "$RUNS" \
        transfer_bps "$TRANSFER_BPS" freefrag "$FREEFRAG" debs "${#DEBS[@]}" deb_mib "$DEB_MIB" app_bin "$APP_BIN" \
        app_size "$APP_SIZE" app_frag "$APP_FRAG" readset_files "${#READSET[@]}" rs_bytes "$RS_BYTES" rd_bytes "$RD_BYTES" \
        rd_files "$RD_FILES" mm_bytes "$MM_BYTES" mm_only "$MM_ONLY" pc_total "$PC_TOTAL" again_bytes $((AGAIN * 4096)) \
        profile_files "${#PROFILE[@]}" prof_bytes "$PROF_BYTES" hot_bytes "$HOT_BYTES" in_rs "$IN_RS" has_ranges "$HAS_RANGES" \
        not_rec "$NOT_REC" not_rs "${NOT_RS:-none}" variants "${VARIANTS[*]}" whole_variants "${WHOLE_VARIANTS[*]}"
bench_finish
