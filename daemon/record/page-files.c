/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fid-util.h"
#include "common/macro.h"
#include "record/page-files.h"

/* ext4's FILEID_INO32_GEN (type 1): { u32 ino; u32 gen; } */
#define HANDLE_INO32_GEN 1

int page_file_open(int mount_fd, uint64_t ino, int flags) {
        FileKey probe = { .handle_type = HANDLE_INO32_GEN, .handle_len = 8 };
        uint32_t v[2] = { (uint32_t) ino, 0 };

        if (ino > UINT32_MAX || ino == 0)
                return -EOVERFLOW;
        memcpy(probe.handle, v, sizeof v);
        return file_key_open(mount_fd, &probe, flags);
}

int page_file_key(int mount_fd, uint64_t ino, uint64_t since_realtime_usec, FileKey *ret) {
        _cleanup_close_ int fd = -EBADF;
        struct statx stx;
        int r;

        fd = page_file_open(mount_fd, ino, O_PATH);
        if (fd < 0)
                return fd;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_BTIME, &stx) < 0)
                return -errno;
        if (!S_ISREG(stx.stx_mode))
                return 0;
        if ((stx.stx_mask & STATX_BTIME) &&
            (uint64_t) stx.stx_btime.tv_sec * USEC_PER_SEC + stx.stx_btime.tv_nsec / NSEC_PER_USEC >= since_realtime_usec)
                return 0;
        r = file_key_from_fd(fd, ret);
        return r < 0 ? r : 1;
}
