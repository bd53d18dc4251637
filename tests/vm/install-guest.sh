#!/bin/bash
# Install the guest build (build-guest.sh) into ROOTFS with `meson install` and enable every systemd unit it
# installs (`systemctl enable` run offline in the chroot), then check each [Install] WantedBy=/RequiredBy=/
# Alias= link exists; a link systemctl did not make is created by hand from the [Install] section.
#   usage: install-guest.sh WORK_DIR ROOTFS
set -euo pipefail
W=${1:?usage: install-guest.sh WORK_DIR ROOTFS}
R=$(realpath "${2:?usage: install-guest.sh WORK_DIR ROOTFS}")
B=$W/build-guest
DESTDIR=$R meson install -C "$B" --no-rebuild --quiet
mapfile -t units < <(meson introspect "$B" --installed |
        python3 -c 'import json, sys
for dst in json.load(sys.stdin).values():
    if dst.startswith("/usr/lib/systemd/system/"): print(dst.rsplit("/", 1)[1])')
[ ${#units[@]} -gt 0 ] || { echo "install-guest.sh: the build installs no units to /usr/lib/systemd/system" >&2; exit 1; }
chroot "$R" systemctl enable "${units[@]}" 2>&1 | sed 's/^/  systemctl: /' || true
# install_keys UNITFILE KEY: the space-separated values of KEY= in the [Install] section
install_keys() {
        awk -v k="$2" '/^\[/ { sec = $0; next } sec == "[Install]" && index($0, k "=") == 1 {
                sub(/^[^=]*=/, ""); n = split($0, v, /[ \t]+/); for (i = 1; i <= n; i++) if (v[i] != "") print v[i] }' "$1"
}
E=$R/etc/systemd/system
for u in "${units[@]}"; do
        f=$R/usr/lib/systemd/system/$u
        links=()
        for t in $(install_keys "$f" WantedBy); do links+=("$t.wants/$u"); done
        for t in $(install_keys "$f" RequiredBy); do links+=("$t.requires/$u"); done
        for a in $(install_keys "$f" Alias); do links+=("$a"); done
        for l in "${links[@]}"; do
                if [ ! -L "$E/$l" ]; then
                        echo "  $l: not made by systemctl enable, linking by hand"
                        mkdir -p "$(dirname "$E/$l")"
                        ln -s "/usr/lib/systemd/system/$u" "$E/$l"
                fi
                echo "  enabled: /etc/systemd/system/$l -> $(readlink "$E/$l")"
        done
done
