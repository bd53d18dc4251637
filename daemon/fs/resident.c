/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/macro.h"
#include "fs/resident.h"

/* cachestat(2), Linux 6.5 (doc/kernel.md §7); not in Debian 12's headers */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range {
        uint64_t off, len;
};

struct cachestat {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static int resident_mincore(int fd, uint64_t size, uint64_t n, uint64_t *ret) {
        _cleanup_free_ unsigned char *vec = NULL;
        uint64_t count = 0;
        void *p;
        int r = 0;

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

int file_resident_pages(int fd, uint64_t size, uint64_t *budget, uint64_t *ret) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), n;
        struct cachestat_range range = {};      /* the whole file */
        struct cachestat cs;
        int r;

        *ret = 0;
        if (size == 0)
                return 0;
        /* the page cache's own count, in the time of the cached pages: nothing walks the file's size */
        if (syscall(__NR_cachestat, fd, &range, &cs, 0) == 0) {
                *ret = cs.nr_cache;
                return 0;
        }
        if (size > SIZE_MAX - page)
                return -EFBIG;
        n = (size + page - 1) / page;
        if (n > *budget)
                return -EFBIG;
        *budget -= n;
        r = resident_mincore(fd, size, n, ret);
        return r;
}

int range_cached_pages(int fd, uint64_t offset, uint64_t length, uint64_t *ret) {
        struct cachestat_range range = { .off = offset, .len = length };
        struct cachestat cs;

        *ret = 0;
        if (length == 0)
                return 0;
        if (syscall(__NR_cachestat, fd, &range, &cs, 0) < 0)
                return errno == ENOSYS ? -EOPNOTSUPP : -errno;
        *ret = cs.nr_cache;
        return 0;
}

int range_resident(int fd, uint64_t first, size_t n, unsigned char *vec) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        void *p;
        int r = 0;

        if (n == 0)
                return 0;
        if (first > (uint64_t) INT64_MAX / page)
                return -EOVERFLOW;
        p = mmap(NULL, n * page, PROT_READ, MAP_SHARED, fd, (off_t) (first * page));
        if (p == MAP_FAILED)
                return -errno;
        if (mincore(p, n * page, vec) < 0)
                r = -errno;
        (void) munmap(p, n * page);
        return r;
}
