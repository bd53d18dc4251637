/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "macro.h"
#include "resident.h"

int file_resident_pages(int fd, uint64_t size, uint64_t *ret) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), n, count = 0;
        _cleanup_free_ unsigned char *vec = NULL;
        void *p;
        int r = 0;

        *ret = 0;
        if (size == 0)
                return 0;
        if (size > SIZE_MAX - page)
                return -EFBIG;
        n = (size + page - 1) / page;
        vec = malloc(n);
        if (!vec)
                return -ENOMEM;
        p = mmap(NULL, (size_t) size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        if (mincore(p, (size_t) size, vec) < 0)
                r = -errno;
        (void) munmap(p, (size_t) size);
        if (r < 0)
                return r;
        for (uint64_t i = 0; i < n; i++)
                count += vec[i] & 1;
        *ret = count;
        return 0;
}
