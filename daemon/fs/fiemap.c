/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "fs/fiemap.h"
#include "common/macro.h"

/* Extents asked for per ioctl: small files need one call, big fragmented ones a few. */
#define FIEMAP_BATCH_MIN 32U
#define FIEMAP_BATCH_MAX 1024U

int fiemap_get(int fd, Extent **ret, size_t *ret_n) {
        _cleanup_free_ struct fiemap *fm = NULL;
        _cleanup_free_ Extent *extents = NULL;
        size_t n = 0, allocated = 0;
        uint32_t batch = FIEMAP_BATCH_MIN;
        uint64_t start = 0;
        int r;

        if (fd < 0 || !ret || !ret_n)
                return -EINVAL;

        for (;;) {
                struct fiemap *nfm;
                uint32_t mapped;
                bool last = false;

                nfm = realloc(fm, sizeof(struct fiemap) + (size_t) batch * sizeof(struct fiemap_extent));
                if (!nfm)
                        return -ENOMEM;
                fm = nfm;

                memset(fm, 0, sizeof(struct fiemap));
                fm->fm_start = start;
                fm->fm_length = FIEMAP_MAX_OFFSET - start;
                fm->fm_flags = 0;       /* no FIEMAP_FLAG_SYNC: never force writeback just to look */
                fm->fm_extent_count = batch;

                r = ioctl(fd, FS_IOC_FIEMAP, fm);
                if (r < 0)
                        return negative_errno();

                mapped = fm->fm_mapped_extents;
                if (mapped == 0)
                        break;
                if (mapped > batch)     /* paranoia: the kernel never fills more than asked */
                        return -EIO;

                if (n + mapped > allocated) {
                        size_t want = MAX(allocated * 2, n + mapped);
                        Extent *ne;

                        ne = reallocarray(extents, want, sizeof(Extent));
                        if (!ne)
                                return -ENOMEM;
                        extents = ne;
                        allocated = want;
                }

                for (uint32_t i = 0; i < mapped; i++) {
                        const struct fiemap_extent *fe = &fm->fm_extents[i];

                        extents[n++] = (Extent) {
                                .logical = fe->fe_logical,
                                .physical = fe->fe_physical,
                                .length = fe->fe_length,
                                .flags = fe->fe_flags,
                        };
                        if (fe->fe_flags & FIEMAP_EXTENT_LAST)
                                last = true;
                }

                /* Fewer than asked also means the end, should a racing writer have made LAST go missing. */
                if (last || mapped < batch)
                        break;

                const struct fiemap_extent *fe = &fm->fm_extents[mapped - 1];
                uint64_t next = fe->fe_logical + fe->fe_length;
                if (next <= start || next >= FIEMAP_MAX_OFFSET)  /* no progress: do not loop forever */
                        break;
                start = next;

                if (batch < FIEMAP_BATCH_MAX)
                        batch *= 2;
        }

        *ret_n = n;
        *ret = n > 0 ? TAKE_PTR(extents) : NULL;
        return 0;
}
