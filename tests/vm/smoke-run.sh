#!/bin/sh
# Guest side of test-vm-smoke.sh (copied to the data disk as run.sh; runs in /mnt/vmtest after the boot).
# Prints the state of the project's units after a real systemd boot; `active` gets seeklessd's state.
section() { echo; echo "== $*"; }
section "systemctl is-active seeklessd.service"
systemctl is-active seeklessd.service | tee active
section "systemctl --failed --no-legend"
systemctl --failed --no-legend --plain | tee failed
section "systemctl show -P ActiveEnterTimestampMonotonic seeklessd.service dbus.service"
systemctl show -P ActiveEnterTimestampMonotonic seeklessd.service dbus.service
echo "(us since boot; start began = InactiveExitTimestampMonotonic, active = ActiveEnterTimestampMonotonic)"
for u in seekless-early.service seeklessd.service dbus.service sysinit.target basic.target multi-user.target; do
        echo "$u: start began $(systemctl show -P InactiveExitTimestampMonotonic "$u")," \
                "active $(systemctl show -P ActiveEnterTimestampMonotonic "$u")"
done
section "systemctl status seeklessd.service seekless-early.service"
systemctl status --no-pager --lines=0 seeklessd.service seekless-early.service
section "seeklessctl status"
seeklessctl status
echo "(exit $?)"
section "journalctl -u seeklessd -b --no-pager | tail -50"
journalctl -u seeklessd -b --no-pager | tail -50
section "systemd-analyze verify seeklessd.service seekless-early.service"
systemd-analyze verify seeklessd.service seekless-early.service
echo "(exit $?)"
section "systemd-analyze verify --man=no seeklessd.service seekless-early.service"
echo "(the same without the Documentation= check: the guest has no man command and no man pages)"
systemd-analyze verify --man=no seeklessd.service seekless-early.service > verify 2>&1
echo "$?" >> verify
cat verify
section "systemd-analyze security seeklessd.service | tail -3"
systemd-analyze security seeklessd.service | tail -3
systemd-analyze security seeklessd.service | sed -n 's/.*Overall exposure level for seeklessd.service: \([0-9.]*\).*/\1/p' > exposure
exit 0
