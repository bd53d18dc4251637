/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fid-util.h"
#include "common/macro.h"
#include "relocate/mover-room.h"
#include "relocate/room.h"

/* A window is only worth clearing for a donor this far (or more) below the lowest free range that holds
 * it whole, and only when at most this many times the donor's size has to be moved out of it. */
#define ROOM_MIN_GAIN_BYTES (UINT64_C(64) * 1024 * 1024)
#define ROOM_MAX_MOVE_FACTOR 2
#define MB_GROUP_PREALLOC_DEFAULT 512

static uint64_t group_prealloc(const char *sysfs_dir) {
        uint64_t v;

        return donor_group_prealloc(sysfs_dir, &v) >= 0 ? v : MB_GROUP_PREALLOC_DEFAULT;
}

/* /dev/<name> for /sys/fs/ext4/<name>; room_plan() checks that it is the mounted device */
static char *device_of(const char *sysfs_dir) {
        _cleanup_free_ char *copy = strdup(sysfs_dir);
        char *p = NULL;

        if (!copy || asprintf(&p, "/dev/%s", basename(copy)) < 0)
                return NULL;
        return p;
}

/* The files a plan names, as items for the mover: opened by inode number (an ext4 handle with generation
 * 0 is not checked against the inode's generation), keyed by the handle they have now. */
static int items_of(int mount_fd, const RoomPlan *p, MoveItem *items, char (*names)[32]) {
        for (size_t i = 0; i < p->n_inodes; i++) {
                union {
                        struct file_handle fh;
                        uint8_t buf[sizeof(struct file_handle) + 8];
                } u = { .fh.handle_bytes = 8, .fh.handle_type = 1 /* FILEID_INO32_GEN */ };
                uint32_t ino_gen[2] = { (uint32_t) p->inodes[i], 0 };
                _cleanup_close_ int fd = -EBADF;
                struct stat st;
                int r;

                memcpy(u.fh.f_handle, ino_gen, sizeof ino_gen);
                fd = open_by_handle_at(mount_fd, &u.fh, O_PATH | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (!S_ISREG(st.st_mode) || st.st_nlink == 0)
                        return -ESTALE;
                (void) snprintf(names[i], sizeof names[i], "inode %" PRIu64, p->inodes[i]);
                items[i] = (MoveItem) {
                        .file_id = -1,
                        .path = names[i],
                        .size = (uint64_t) st.st_size,
                        .mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                };
                r = file_key_from_fd(fd, &items[i].key);
                if (r < 0)
                        return r;
        }
        return 0;
}

void room_evacuation_done(RoomEvacuation *e) {
        free(e->items);
        free(e->outcomes);
        free(e->names);
        safe_close(e->pilot_fd);
        *e = (RoomEvacuation) { .pilot_fd = -EBADF };
}

int mover_room_plan(const MoverOptions *o, const MoveItem *items, size_t n, uint64_t blocks, uint64_t bsize,
                    RoomEvacuation *ret, MoverStats *st) {
        _cleanup_free_ char *device = NULL;
        _cleanup_free_ uint64_t *keep = calloc(n + 1, sizeof *keep);
        _cleanup_free_ MoveItem *out_items = NULL;
        _cleanup_free_ MoveOutcome *outcomes = NULL;
        _cleanup_free_ char (*names)[32] = NULL;
        _cleanup_close_ int pilot_fd = -EBADF;
        RoomPlan p = {};
        DonorWindow window;
        size_t n_out;
        uint64_t below = UINT64_MAX, pilot = UINT64_MAX;
        struct stat mst;
        int r;

        if (!keep)
                return -ENOMEM;
        if (!o->sysfs_dir || !o->state_file || bsize == 0 || fstat(o->mount_fd, &mst) < 0)
                return 0;
        device = device_of(o->sysfs_dir);
        if (!device)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint32_t gen;

                file_key_ino_gen(&items[i].key, &keep[i], &gen);
        }
        /* The donor's pilot first: the window is chosen around it. Made once the window is clear, it
         * landed in the window when that was the lowest free space, and a window of one unit then lacked
         * what the pilot took (its chunk: the donor is made of whole ones). Without it the donor makes its
         * own, as without a window. */
        pilot_fd = donor_pilot_create(o->mount_fd, &pilot);
        if (pilot_fd < 0)
                pilot = UINT64_MAX;
        /* below where the one-range donor would go, by a margin */
        r = donor_lowest_free(o->mount_fd, (blocks + 1) * bsize, &below);
        if (r < 0 && r != -ENOSPC)
                return 0;
        below = r < 0 ? UINT64_MAX : below / bsize;
        if (below != UINT64_MAX) {
                if (below * bsize < ROOM_MIN_GAIN_BYTES)
                        return 0;
                below -= ROOM_MIN_GAIN_BYTES / bsize;
        }
        r = room_plan(device, mst.st_dev, blocks, below, group_prealloc(o->sysfs_dir), ROOM_MAX_MOVE_FACTOR * blocks,
                      keep, n, pilot, &p);
        if (r < 0)
                return 0;
        window = (DonorWindow) {
                .start = p.start,
                .floor = p.group_start,
                .end = p.start + p.blocks,
                .group_blocks = p.group_blocks,
        };
        st->room_start = p.start * bsize;
        n_out = p.n_inodes;
        if (n_out > 0) {
                out_items = calloc(n_out, sizeof *out_items);
                outcomes = calloc(n_out, sizeof *outcomes);
                names = calloc(n_out, sizeof *names);
                if (!out_items || !outcomes || !names) {
                        room_plan_done(&p);
                        return -ENOMEM;
                }
                r = items_of(o->mount_fd, &p, out_items, names);
                if (r < 0) {
                        room_plan_done(&p);
                        return 0;       /* a file went away or changed since the scan: leave the window alone */
                }
        }
        room_plan_done(&p);
        *ret = (RoomEvacuation) {
                .items = TAKE_PTR(out_items),
                .outcomes = TAKE_PTR(outcomes),
                .n = n_out,
                .names = TAKE_PTR(names),
                .window = window,
                .pilot_fd = TAKE_FD(pilot_fd),
        };
        return 1;
}

int mover_room_commit(const MoverOptions *o, RoomEvacuation *e, int run_result, const MoverStats *run_stats,
                      DonorWindow *ret, MoverStats *st) {
        if (e->n > 0) {
                if (run_result < 0)
                        return 0;
                st->room_files = run_stats->files_moved;
                st->room_bytes = run_stats->bytes_moved;
                if (run_stats->cancelled)
                        return -ECANCELED;
                if (run_stats->io_error < 0) {
                        st->io_error = run_stats->io_error;     /* the batch stops too */
                        return 0;
                }
                for (size_t i = 0; i < e->n; i++)
                        if (e->outcomes[i].result != MOVE_DONE && e->outcomes[i].result != MOVE_IN_PLACE)
                                return 0;       /* something stays in the window: the donor is made the usual way */
                /* the old blocks were freed when the run closed its donor: commit, so that ext4 may hand
                 * them out again (freed data blocks wait for the journal commit) */
                (void) syncfs(o->mount_fd);
        }
        st->room_cleared = true;
        *ret = e->window;
        ret->pilot = e->pilot_fd >= 0;
        ret->pilot_fd = TAKE_FD(e->pilot_fd);
        return 1;
}
