/* SPDX-License-Identifier: GPL-2.0-or-later */

#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/macro.h"
#include "common/time-util.h"
#include "fs/fid-util.h"
#include "fs/resident.h"
#include "prefetch/prefetch.h"

static const char *const prefetch_end_table[_PREFETCH_END_MAX] = {
        [PREFETCH_END_DONE] = "done",
        [PREFETCH_END_CAP] = "cap",
        [PREFETCH_END_DEADLINE] = "deadline",
        [PREFETCH_END_CANCELLED] = "cancelled",
        [PREFETCH_END_STOPPED] = "stopped",
};

DEFINE_STRING_TABLE(prefetch_end, PrefetchEnd);

/* Open files, by the plan's file index: a plan in disk order visits a file's ranges mostly one after the
 * other, so a small direct-mapped cache keeps the opens to about one a file without holding thousands */
#define FD_SLOTS 64

typedef struct Run {
        const PrefetchPlan *plan;
        const PrefetchOptions *o;
        PrefetchStats *st;
        int fds[FD_SLOTS];
        uint32_t fd_file[FD_SLOTS];
        uint8_t *stale;                 /* files found stale during the run (the plan's are skipped too) */
        uint64_t page, since_ask;
} Run;

uint64_t prefetch_chunk_bytes(int bdev_fd) {
        long sectors = 0;

        if (bdev_fd < 0 || ioctl(bdev_fd, BLKRAGET, &sectors) < 0 || sectors <= 0)
                return PREFETCH_CHUNK_DEFAULT;
        return (uint64_t) sectors * 512;
}

/* The file's fd, opened when first needed; -1 when it no longer opens (stale: its ranges skipped). */
static int file_fd(Run *run, uint32_t file) {
        size_t slot = file % FD_SLOTS;
        int fd;

        if (run->stale[file])
                return -1;
        if (run->fds[slot] >= 0 && run->fd_file[slot] == file)
                return run->fds[slot];
        fd = file_key_open(run->o->mount_fd, &run->plan->files[file].key, O_RDONLY | O_NONBLOCK);
        if (fd < 0) {
                run->stale[file] = 1;
                run->st->files_stale++;
                return -1;
        }
        (void) safe_close(run->fds[slot]);
        run->fds[slot] = fd;
        run->fd_file[slot] = file;
        return fd;
}

static PrefetchEnd should_end(Run *run) {
        const PrefetchOptions *o = run->o;

        if (o->cancel && atomic_load(o->cancel))
                return PREFETCH_END_CANCELLED;
        if (o->deadline_usec > 0 && now_usec(CLOCK_MONOTONIC) >= o->deadline_usec)
                return PREFETCH_END_DEADLINE;
        if (o->max_bytes > 0 && run->st->bytes_asked >= o->max_bytes)
                return PREFETCH_END_CAP;
        if (o->should_stop && run->since_ask >= PREFETCH_ASK_BYTES) {
                run->since_ask = 0;
                if (o->should_stop(o->userdata))
                        return PREFETCH_END_STOPPED;
        }
        return PREFETCH_END_DONE;
}

/* One range in calls of at most a chunk, what is cached skipped. Returns PREFETCH_END_DONE to go on. */
static PrefetchEnd issue_range(Run *run, int fd, const PrefetchRange *r, uint64_t chunk) {
        /* whole pages: what the kernel reads, and what the budget counts */
        uint64_t off = r->offset / run->page * run->page,
                 end = (r->offset + r->length + run->page - 1) / run->page * run->page;

        while (off < end) {
                uint64_t len = MIN(chunk - off % chunk, end - off), cached = 0;
                PrefetchEnd e = should_end(run);
                int k;

                if (e != PREFETCH_END_DONE)
                        return e;
                if (run->o->max_bytes > 0)
                        len = MIN(len, run->o->max_bytes - run->st->bytes_asked);
                /* pages the cache holds are not read again by the kernel either; counted, and a call saved
                 * when all of them are there */
                if (range_cached_pages(fd, off, len, &cached) >= 0 && cached * run->page >= len) {
                        run->st->bytes_cached += len;
                        off += len;
                        continue;
                }
                run->st->bytes_cached += MIN(cached * run->page, len);
                k = posix_fadvise(fd, (off_t) off, (off_t) len, POSIX_FADV_WILLNEED);
                run->st->calls++;
                if (k != 0)
                        run->st->errors++;
                else {
                        uint64_t asked = len - MIN(cached * run->page, len);

                        run->st->bytes_asked += asked;
                        run->since_ask += asked;
                        if (r->kind == PREFETCH_METADATA)
                                run->st->metadata_asked += asked;
                }
                off += len;
        }
        return PREFETCH_END_DONE;
}

int prefetch_run(const PrefetchPlan *plan, const PrefetchOptions *o, PrefetchStats *ret_stats) {
        _cleanup_free_ uint8_t *stale = NULL;
        PrefetchStats st = { .files_stale = plan->files_stale };
        uint64_t chunk = o->chunk_bytes > 0 ? o->chunk_bytes : PREFETCH_CHUNK_DEFAULT;
        Run run = { .plan = plan, .o = o, .st = &st, .page = (uint64_t) sysconf(_SC_PAGESIZE) };
        PrefetchEnd e = PREFETCH_END_DONE;

        if (o->mount_fd < 0 || chunk < run.page)
                return -EINVAL;
        chunk = chunk / run.page * run.page;
        stale = calloc(MAX(plan->n_files, (size_t) 1), 1);
        if (!stale)
                return -ENOMEM;
        if (plan->n_files > 0)
                memcpy(stale, plan->stale, plan->n_files);
        run.stale = stale;
        for (size_t i = 0; i < FD_SLOTS; i++)
                run.fds[i] = -EBADF;

        for (size_t i = 0; i < plan->n_ranges && e == PREFETCH_END_DONE; i++) {
                const PrefetchRange *r = &plan->ranges[i];
                int fd = r->kind == PREFETCH_METADATA ? o->bdev_fd : file_fd(&run, r->file);

                if (fd >= 0)
                        e = issue_range(&run, fd, r, chunk);
                if (e == PREFETCH_END_DONE)
                        st.ranges_done = i + 1;
        }
        if (e == PREFETCH_END_DONE && o->max_bytes > 0 && st.bytes_asked >= o->max_bytes &&
            st.ranges_done < plan->n_ranges)
                e = PREFETCH_END_CAP;
        for (size_t i = 0; i < FD_SLOTS; i++)
                (void) safe_close(run.fds[i]);
        st.end = e;
        *ret_stats = st;
        return 0;
}
