#!/bin/bash
# Guest side of test-vm-lifecycle.sh (run.sh on the data disk, next to the two packages and `versions`;
# runs in /mnt/vmtest after each boot, keeps its boot counter and state there). A user's life with the
# Debian package on a Debian 12 guest that never had seekless, with real systemd and apt, no network:
#   boot 1: the file list of the whole root filesystem; `apt-get install ./seekless_V.deb` starts the
#           daemon at once (no boot session for a boot it did not see begin, even inside a long
#           BootTailSec=), no failed units; reboot.
#   boot 2: the boot is recorded, both units verify clean (systemd-analyze), no failed units; then in this
#           boot: upgrade to V+test1 (the daemon restarted on the new files, profiles and sessions kept),
#           `apt-get remove` (daemon and bus name gone, database and configuration kept), reinstall (the
#           profiles are back), `apt-get purge` (the file list equals boot 1's: nothing of seekless is left).
#           No failed units after every step.
# Prints "ok: ..." per check; the first failure prints "FAIL: ..." and exits 1 (the VM then powers off).
set -uo pipefail
cd "$(dirname "$0")"
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export DEBIAN_FRONTEND=noninteractive
n=$(( $(cat bootcount 2>/dev/null || echo 0) + 1 ))
echo "$n" > bootcount
read -r V NV DV < versions       # package version, the upgrade's, what the daemon reports (upstream version)
echo "== boot $n ($(cut -d' ' -f1 /proc/uptime) s since boot)"

# the FAIL line comes last, so that it sits next to the host's summary in a log cut short
fail() { journalctl -b --no-pager -u seeklessd -u seekless-early | tail -n 40; echo "FAIL (boot $n): $*"; exit 1; }
ok() { echo "ok: $*"; }
step() { echo "-- $* ($(cut -d' ' -f1 /proc/uptime) s since boot)"; }
wait_for() {            # SECONDS CMD...
        local i
        for ((i = 0; i < $1; i += 1)); do "${@:2}" && return 0; sleep 1; done
        return 1
}
journal() { journalctl -b --no-pager -o cat -u "$1"; }
no_failed_units() {     # WHEN
        local f
        f=$(systemctl --failed --no-legend --plain)
        [ -z "$f" ] || fail "failed units $1: $f"
        ok "no failed units $1"
}
apt_get() {             # apt-get ARGS..., its output indented; fails the test when apt-get does
        echo "\$ apt-get $*"
        apt-get -y -q -o Dpkg::Use-Pty=0 "$@" 2>&1 | sed 's/^/    /'
        [ "${PIPESTATUS[0]}" = 0 ] || fail "apt-get $* failed"
}
pkg_state() { dpkg-query -W -f '${db:Status-Abbrev}${Version}' seekless 2>/dev/null; }
main_pid() { systemctl show -P MainPID seeklessd.service; }
daemon_running() { grep -qsx seeklessd /proc/[0-9]*/comm; }
# the daemon holds its name / the name is known to the bus at all (held, or activatable through a service file)
bus_name_held() { busctl --system --no-pager --no-legend --acquired list | grep -q '^org\.seekless\.Seekless1 '; }
bus_name_known() { busctl --system --no-pager --no-legend list | grep -q '^org\.seekless\.Seekless1 '; }
# what must survive: every profile, every boot session, the boot profile's files (the launches the test
# itself makes keep recording meanwhile, and KeepLaunches= retires the oldest of a program's sessions)
names() { seeklessctl --json=short profiles | jq -r '.[].name' | LC_ALL=C sort; }
boot_ids() { seeklessctl --json=short sessions | jq -r '.[] | select(.kind == "boot") | .id' | sort; }
boot_files() { seeklessctl --json=short show boot | jq -r '.files[].path' | LC_ALL=C sort; }
kept() {                # FILE_BEFORE CMD WHAT: every line of FILE_BEFORE is still in CMD's output
        local lost
        lost=$(comm -23 "$1" <($2))
        [ -z "$lost" ] || fail "$3 lost: $(echo "$lost" | tr '\n' ' ')"
}
# The boot profile's files with their inode numbers. A file the package manager replaced since (a new inode
# under the same name: the upgrade unpacks the daemon, its units, its generator) or removed is gone for
# seekless too: the next merge of any profile that holds it drops it from every profile, and the next boot
# records the new file. Only the others must stay.
boot_files_ino() { boot_files | while IFS= read -r f; do echo "$(stat -c %i -- "$f" 2>/dev/null || echo -) $f"; done; }
kept_boot_files() {     # FILE_BEFORE (from boot_files_ino)
        local ino f lost=
        replaced=0 dropped=0
        boot_files > boot-files-now.txt
        while read -r ino f; do
                if [ "$(stat -c %i -- "$f" 2>/dev/null || echo -)" != "$ino" ]; then
                        replaced=$((replaced + 1))
                        grep -qxF -- "$f" boot-files-now.txt || dropped=$((dropped + 1))
                        continue
                fi
                grep -qxF -- "$f" boot-files-now.txt || lost+="$f "
        done < "$1"
        [ -z "$lost" ] || fail "files of the boot profile lost: $lost"
}
# Every file of the root filesystem (type, mode, owner, path, link target) but where the system writes by
# itself or the package manager keeps its own records: the journal, apt's and dpkg's state, caches and
# logs, and the private /var/tmp of other services (named after each boot).
snapshot() {
        find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /mnt/vmtest \
                        -o -path /var/log/journal -o -path /var/log/apt -o -path /var/log/dpkg.log \
                        -o -path /var/lib/apt -o -path /var/cache/apt -o -path /var/lib/dpkg \
                        -o -path /var/cache/debconf \
                        -o \( -path '/var/tmp/systemd-private-*' ! -path '*seekless*' \) \) -prune \
                -o -printf '%y %m %u:%g %p %l\n' | LC_ALL=C sort
}

case $n in
1)
        [ -z "$(pkg_state)" ] && [ ! -e /usr/sbin/seeklessd ] || fail "seekless is already there: $(pkg_state)"
        no_failed_units "before the install"
        snapshot > files-before.txt
        ok "file list of the root filesystem before the install: $(wc -l < files-before.txt) entries"
        # An admin's drop-in made before the install: this boot's tail reaches past the install however
        # slow the emulation, and still the daemon started after the boot must record none of it
        mkdir -p /etc/seekless/seekless.conf.d
        printf '[Record]\nBootTailSec=1d\n' > /etc/seekless/seekless.conf.d/90-vmtest-tail.conf
        step "install $V"
        apt_get install "./seekless_${V}_$(dpkg --print-architecture).deb"
        [ "$(pkg_state)" = "ii $V" ] || fail "after the install dpkg says '$(pkg_state)'"
        systemctl is-active -q seeklessd.service || fail "the install did not start seeklessd.service"
        for u in seeklessd.service seekless-early.service; do
                [ "$(systemctl is-enabled "$u")" = enabled ] || fail "$u is $(systemctl is-enabled "$u") after the install"
        done
        wait_for 30 bus_name_held || fail "org.seekless.Seekless1 is not on the bus"
        ok "installed: seeklessd.service started by the package, both units enabled, the daemon on the bus"
        seeklessctl status || fail "seeklessctl status"
        wait_for 30 eval 'journal seeklessd | grep -q "no boot session this time"' ||
                fail "the daemon started after the boot did not say it leaves this boot unrecorded"
        [ "$(seeklessctl --json=short sessions | jq '[.[] | select(.kind == "boot")] | length')" = 0 ] ||
                fail "a boot session for a boot that began without seekless"
        ok "no boot session for this boot, which began before the install: $(journal seeklessd | grep -m1 'no boot session')"
        # the install's daemon-reload ran the boot collector (a generator); the daemon stopped it
        grep -qsx seekless-boot-c /proc/[0-9]*/comm && fail "a boot collector still runs after the install"
        ok "no boot collector left running ($(ls /run/seekless | tr '\n' ' '))"
        no_failed_units "after the install"
        # the next boot is recorded as any other, with a tail short enough not to keep the test waiting
        printf '[Record]\nBootTailSec=5s\n' > /etc/seekless/seekless.conf.d/90-vmtest-tail.conf
        touch reboot-requested
        ;;
2)
        # what vm-smoke checked: the units after a real boot
        systemctl is-active -q seeklessd.service || fail "seeklessd.service is $(systemctl is-active seeklessd.service) after the reboot"
        for u in seekless-early.service seeklessd.service dbus.service sysinit.target multi-user.target; do
                echo "$u: start began $(systemctl show -P InactiveExitTimestampMonotonic "$u") us," \
                        "active $(systemctl show -P ActiveEnterTimestampMonotonic "$u") us"
        done
        # the guest has no man command and no man pages: --man=no leaves out the Documentation= check
        verify=$(systemd-analyze verify --man=no seeklessd.service seekless-early.service 2>&1) ||
                fail "systemd-analyze verify: $verify"
        [ -z "$verify" ] || fail "systemd-analyze verify says: $verify"
        ok "systemd-analyze verify --man=no seeklessd.service seekless-early.service is clean"
        echo "systemd-analyze security seeklessd.service: $(systemd-analyze security seeklessd.service | tail -n 1)"
        no_failed_units "after the reboot"
        wait_for 150 eval 'journal seeklessd | grep -q "Recorded boot session"' || fail "no boot session stored within 150 s"
        ok "the boot after the install is recorded: $(journal seeklessd | grep -m1 'Recorded boot session')"
        seeklessctl status
        names > profiles-1.txt
        boot_ids > boots-1.txt
        boot_files_ino > boot-files-1.txt
        grep -qx boot profiles-1.txt && [ -s boots-1.txt ] && [ -s boot-files-1.txt ] || fail "no boot profile"

        step "upgrade $V -> $NV"
        pid=$(main_pid)
        ino=$(stat -c %i /usr/sbin/seeklessd)
        mkdir -p /etc/seekless/seekless.conf.d
        printf '[Idle]\nIdleSec=20min\n' > /etc/seekless/seekless.conf.d/50-local.conf
        apt_get install "./seekless_${NV}_$(dpkg --print-architecture).deb"
        [ "$(pkg_state)" = "ii $NV" ] || fail "after the upgrade dpkg says '$(pkg_state)'"
        systemctl is-active -q seeklessd.service || fail "seeklessd.service is not active after the upgrade"
        npid=$(main_pid)
        [ "$npid" != "$pid" ] && [ "$npid" -gt 0 ] || fail "the upgrade did not restart seeklessd (MainPID $pid -> $npid)"
        exe=$(readlink "/proc/$npid/exe")
        [ "$exe" = /usr/sbin/seeklessd ] || fail "the daemon runs '$exe'"
        [ "$(stat -L -c %i "/proc/$npid/exe")" = "$(stat -c %i /usr/sbin/seeklessd)" ] &&
                [ "$(stat -c %i /usr/sbin/seeklessd)" != "$ino" ] ||
                fail "the daemon does not run the file the upgrade unpacked"
        ok "upgraded to $NV: seeklessd restarted (pid $pid -> $npid) on the file the upgrade unpacked (inode $ino -> $(stat -c %i /usr/sbin/seeklessd))"
        wait_for 30 bus_name_held || fail "org.seekless.Seekless1 is not on the bus after the upgrade"
        version=$(seeklessctl --json=short status | jq -r .version)
        [ "$version" = "$DV" ] && [ "$(seeklessctl --version)" = "seeklessctl $DV" ] ||
                fail "Version: the daemon says '$version', seeklessctl '$(seeklessctl --version)', expected $DV"
        ok "the daemon's Version property and seeklessctl --version: $DV (the upstream version of $NV)"
        kept profiles-1.txt names "profiles"
        kept boots-1.txt boot_ids "boot sessions"
        kept_boot_files boot-files-1.txt
        [ -f /etc/seekless/seekless.conf.d/50-local.conf ] || fail "the upgrade removed an admin's drop-in"
        ok "the upgrade kept every profile ($(wc -l < profiles-1.txt)), the boot session and the boot profile's $(wc -l < boot-files-1.txt) files but the $replaced the upgrade replaced ($dropped of them dropped so far), and the admin's drop-in"
        no_failed_units "after the upgrade"
        names > profiles-2.txt

        step "remove"
        apt_get remove seekless
        [ "$(pkg_state)" = "rc $NV" ] || fail "after the remove dpkg says '$(pkg_state)'"
        ! daemon_running || fail "a seeklessd process is left after the remove"
        ! systemctl is-active -q seeklessd.service || fail "seeklessd.service is still active"
        wait_for 10 eval '! bus_name_known' || fail "org.seekless.Seekless1 is still on the bus (or activatable)"
        [ -f /var/lib/seekless/seekless.db ] && [ -f /etc/seekless/seekless.conf ] &&
                [ -f /etc/seekless/seekless.conf.d/50-local.conf ] || fail "the remove took the database or the configuration"
        ok "removed: no daemon, no bus name; the database and the configuration are kept"
        no_failed_units "after the remove"

        step "reinstall $NV"
        apt_get install "./seekless_${NV}_$(dpkg --print-architecture).deb"
        [ "$(pkg_state)" = "ii $NV" ] || fail "after the reinstall dpkg says '$(pkg_state)'"
        systemctl is-active -q seeklessd.service || fail "the reinstall did not start seeklessd.service"
        wait_for 30 bus_name_held || fail "org.seekless.Seekless1 is not on the bus after the reinstall"
        kept profiles-2.txt names "profiles"
        kept boots-1.txt boot_ids "boot sessions"
        kept_boot_files boot-files-1.txt
        ok "reinstalled: the daemon is back with the $(wc -l < profiles-2.txt) profiles of before the remove, the boot session and the boot profile's files ($replaced replaced or removed by the package manager since)"
        no_failed_units "after the reinstall"

        step "purge"
        apt_get purge seekless
        case $(pkg_state) in
        "" | "un " | "pn ") ;;
        *) fail "after the purge dpkg says '$(pkg_state)'" ;;
        esac
        ! daemon_running || fail "a seeklessd process is left after the purge"
        for d in /var/lib/seekless /etc/seekless /run/seekless; do [ ! -e "$d" ] || fail "the purge left $d"; done
        wait_for 10 eval '! bus_name_known' || fail "org.seekless.Seekless1 is still on the bus (or activatable)"
        snapshot > files-after.txt
        diff -u files-before.txt files-after.txt > files.diff ||
                { sed -n '3,$p' files.diff | head -n 40; fail "the root filesystem differs from before the install"; }
        ok "purged: the root filesystem's $(wc -l < files-after.txt) entries are those of before the install; /var/lib/seekless, /etc/seekless, /run/seekless are gone"
        no_failed_units "after the purge"
        ;;
*)
        echo "nothing to do in boot $n"
        ;;
esac
exit 0
