# SPDX-License-Identifier: GPL-2.0-or-later
# Install what building and testing seekless needs on Debian 12 / Ubuntu (sourced; idempotent: apt is
# only touched when something is missing).
install_deps() {
        local pkgs=(gcc libc6-dev meson ninja-build pkg-config scdoc
                    libsystemd-dev libsqlite3-dev libext2fs-dev
                    dbus dbus-daemon systemd jq sqlite3 e2fsprogs util-linux mount
                    python3
                    # a real program's reads and mappings, to compare with its profile (tests/test-python-set.sh)
                    strace
                    # the safety campaign with concurrent I/O (tests/campaigns/campaign-fio.sh)
                    fio
                    # the failing disk under tests/test-faults.sh (tests/helpers/faultfs.c)
                    libfuse3-dev
                    # the VM suite (tests/vm): QEMU, qemu-img, debootstrap; xz-utils/gzip for the kernel+initramfs
                    qemu-system-x86 qemu-utils debootstrap xz-utils gzip
                    # the Debian package (tests/test-package.sh): dpkg-buildpackage, dh, lintian
                    dpkg-dev debhelper lintian
                    # the fuzz targets (fuzz/run.sh): clang with libFuzzer and the sanitizers' runtimes
                    clang libclang-rt-14-dev
                    # the BPF page recorder (daemon/record-bpf/): libbpf, bpftool for its skeleton (clang,
                    # above, builds its program for the BPF target)
                    libbpf-dev bpftool "$@")
        local missing=()
        for p in "${pkgs[@]}"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        if [ "$(id -u)" != 0 ]; then
                echo "Missing packages: ${missing[*]} (run as root to install them)" >&2
                return 1
        fi
        echo "Installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
