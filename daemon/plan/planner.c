/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "fs/fid-util.h"
#include "fs/fiemap.h"
#include "plan/hot-ranges.h"
#include "plan/inoset.h"
#include "common/macro.h"
#include "common/time-util.h"
#include "plan/planner.h"

#ifndef FS_INLINE_DATA_FL
#define FS_INLINE_DATA_FL 0x10000000
#endif
#ifndef FS_ENCRYPT_FL
#define FS_ENCRYPT_FL 0x00000800
#endif

void plan_done(Plan *p) {
        for (size_t i = 0; i < p->n_fs; i++) {
                for (size_t j = 0; j < p->fs[i].n_files; j++) {
                        free(p->fs[i].files[j].path);
                        free(p->fs[i].files[j].extents);
                }
                free(p->fs[i].files);
                free(p->fs[i].mount);
        }
        free(p->fs);
        plan_skips_free(p->skipped, p->n_skipped);
        for (size_t i = 0; i < p->n_profiles; i++)
                free(p->profiles[i].name);
        free(p->profiles);
        *p = (Plan) {};
}

/* More than a quarter of the size is holes. The allocated bytes include extent tree blocks, which only
 * makes a file look a little less sparse than it is. */
static bool sparse_too_much(uint64_t size, uint64_t allocated) {
        return allocated < size && (size - allocated) > size / 4;
}

int planner_check_fd(int fd, const PlanConfig *cfg, uint64_t now_realtime_usec, char *reason, size_t reason_size,
                     bool *ret_retry) {
        struct stat st;
        int flags = 0;
        uint64_t changed_usec;

        *ret_retry = false;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                snprintf(reason, reason_size, "not a regular file");
                return 1;
        }
        if (st.st_size == 0) {
                snprintf(reason, reason_size, "empty");
                return 1;
        }
        /* MOVE_EXT keeps holes as holes and the mover packs a file's data across them, but the donor is
         * sized by the files' sizes (a slice per file). A file with a few holes (zero pages that
         * `cp --sparse`, `mkfs.ext4 -d` or a package tool left out of a library) is moved; a mostly empty
         * one would claim its full size of free space for nothing. */
        if (sparse_too_much((uint64_t) st.st_size, (uint64_t) st.st_blocks * 512)) {
                snprintf(reason, reason_size, "sparse file (more than a quarter holes)");
                return 1;
        }
        /* the newer of content and inode changes: a file being rewritten should settle first */
        changed_usec = MAX((uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000,
                           (uint64_t) st.st_ctim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_ctim.tv_nsec / 1000);
        if (now_realtime_usec < changed_usec + cfg->min_file_age_usec) {
                snprintf(reason, reason_size, "modified %" PRIu64 " s ago (MinFileAgeSec=%" PRIu64 ")",
                         now_realtime_usec > changed_usec ? (now_realtime_usec - changed_usec) / USEC_PER_SEC : 0,
                         cfg->min_file_age_usec / USEC_PER_SEC);
                *ret_retry = true;
                return 1;
        }
        if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                return -errno;
        if (flags & FS_ENCRYPT_FL) {
                snprintf(reason, reason_size, "encrypted");
                return 1;
        }
        if (flags & FS_INLINE_DATA_FL) {
                snprintf(reason, reason_size, "inline data");
                return 1;
        }
        if (!(flags & FS_EXTENT_FL)) {
                snprintf(reason, reason_size, "not extent-mapped");
                return 1;
        }
        if (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)) {
                snprintf(reason, reason_size, "%s", flags & FS_IMMUTABLE_FL ? "immutable" : "append-only");
                return 1;
        }
        if (flags & FS_JOURNAL_DATA_FL) {
                snprintf(reason, reason_size, "data journaling");
                return 1;
        }
        /* A read lease is only granted when nobody has the file open for writing. Where leases are not
         * available (fs.leases-enable=0, no CAP_LEASE for others' files) the probe tells nothing: the
         * mover checks again and the kernel serializes the move against writers anyway. */
        if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0) {
                if (errno == EAGAIN || errno == EBUSY) {
                        snprintf(reason, reason_size, "open for writing");
                        *ret_retry = true;
                        return 1;
                }
                return 0;
        }
        (void) fcntl(fd, F_SETLEASE, F_UNLCK);
        return 0;
}

/* Without a journal, nothing orders the extent swap after the data write: a crash in the middle of a
 * move could leave a file pointing at blocks that never received its data. jbd2 lists every journal it
 * runs in /proc/fs/jbd2/<device>-<journal inode>. */
static bool fs_has_journal(dev_t dev) {
        _cleanup_closedir_ DIR *d = NULL;
        char link[64], target[PATH_MAX];
        const char *name;
        struct dirent *de;
        ssize_t n;

        snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(dev), minor(dev));
        n = readlink(link, target, sizeof target - 1);
        if (n < 0)
                return false;
        target[n] = 0;
        name = strrchr(target, '/');
        name = name ? name + 1 : target;
        d = opendir("/proc/fs/jbd2");
        if (!d)
                return false;
        while ((de = readdir(d)))
                if (strncmp(de->d_name, name, strlen(name)) == 0 && de->d_name[strlen(name)] == '-')
                        return true;
        return false;
}

int plan_skip_add(PlanSkip **list, size_t *n, const char *path, const char *reason, bool retry) {
        PlanSkip *l = reallocarray(*list, *n + 1, sizeof *l);

        if (!l)
                return -ENOMEM;
        *list = l;
        l[*n] = (PlanSkip) { .path = strdup(path), .reason = strdup(reason), .retry = retry };
        if (!l[*n].path || !l[*n].reason) {
                free(l[*n].path);
                free(l[*n].reason);
                return -ENOMEM;
        }
        (*n)++;
        return 0;
}

void plan_skips_free(PlanSkip *list, size_t n) {
        for (size_t i = 0; list && i < n; i++) {
                free(list[i].path);
                free(list[i].reason);
                free(list[i].offsets);
                free(list[i].lengths);
        }
        free(list);
}

static int add_skip(Plan *p, const char *path, const char *reason, bool retry) {
        return plan_skip_add(&p->skipped, &p->n_skipped, path, reason, retry);
}

/* See planner.h. */
uint64_t planner_layout_breaks(const PlanFile *files, size_t n, uint64_t unit) {
        uint64_t breaks = 0, next_base = 0;
        bool first = true;

        for (size_t i = 0; i < n; i++) {
                const PlanFile *f = &files[i];
                uint64_t base, end;

                if (f->n_extents == 0)
                        continue;
                base = f->extents[0].physical - f->extents[0].logical % unit;
                if (!first && base != next_base)
                        breaks++;
                end = f->extents[0].physical + f->extents[0].length;
                for (size_t e = 1; e < f->n_extents; e++) {
                        if (f->extents[e].physical < end || f->extents[e].physical - end >= unit)
                                breaks++;
                        end = f->extents[e].physical + f->extents[e].length;
                }
                next_base = base + (end - base + unit - 1) / unit * unit;
                first = false;
        }
        return breaks;
}

static uint64_t layout_breaks(const FsPlan *fp) {
        return planner_layout_breaks(fp->files, fp->n_files, (uint64_t) sysconf(_SC_PAGESIZE));
}

/* Profiles are read separately (the boot at boot, each program at its launch): what matters is each
 * profile's own run of files. A profile whose files already lie as a run would put them (up to `allowed`
 * breaks) is left where it is and only the others move, so a new or changed profile does not make every
 * other one be rewritten. Returns how many files were dropped from the plan. */
static size_t drop_in_place_profiles(FsPlan *fp, uint64_t allowed) {
        uint64_t unit = (uint64_t) sysconf(_SC_PAGESIZE);
        size_t kept = 0, dropped = 0;

        for (size_t s = 0, e; s < fp->n_files; s = e) {
                FsPlan group;

                for (e = s + 1; e < fp->n_files && fp->files[e].profile == fp->files[s].profile; e++)
                        ;
                group = (FsPlan) { .files = fp->files + s, .n_files = e - s };
                if (layout_breaks(&group) <= allowed) {
                        for (size_t k = s; k < e; k++) {
                                free(fp->files[k].path);
                                free(fp->files[k].extents);
                        }
                        dropped += e - s;
                        continue;
                }
                for (size_t k = s; k < e; k++)
                        fp->files[kept++] = fp->files[k];
        }
        fp->n_files = kept;
        fp->bytes = fp->slices = 0;
        for (size_t k = 0; k < kept; k++) {
                fp->bytes += plan_file_bytes(&fp->files[k]);
                fp->slices += (plan_file_bytes(&fp->files[k]) + unit - 1) / unit * unit;
        }
        return dropped;
}

/* Nothing else moves on filesystem fi: a running executable that the newest run which had it moved (or
 * found in place), unchanged since, stays where it is. Queued, the early pass would move it again at
 * every boot it runs through while nothing around it changed. */
static int keep_settled_executables(Db *db, Plan *p, size_t fi) {
        for (size_t k = 0; k < p->n_skipped; k++) {
                PlanSkip *ps = &p->skipped[k];
                char *reason;

                if (ps->file_id == 0 || ps->fs != fi || db_run_file_settled(db, ps->file_id, ps->size, ps->mtime_ns) <= 0)
                        continue;       /* not known settled: queued */
                reason = strdup("running executable (moved by an earlier run, unchanged since)");
                if (!reason)
                        return -ENOMEM;
                free(ps->reason);
                ps->reason = reason;
                ps->retry = false;
                ps->file_id = 0;        /* not queued */
        }
        return 0;
}

/* A profile's file in the planner's first pass (each file once), for its ranges in the second. */
typedef enum CandState {
        CAND_NONE,              /* not part of any layout here (another filesystem, cannot be opened) */
        CAND_SKIPPED,           /* stays where it is (its extents count for the qualities) */
        CAND_PLACED,            /* placed by an earlier profile */
        CAND_MOVABLE,
} CandState;

typedef struct Cand {
        CandState state;
        size_t fi;              /* index into Plan.fs (unless CAND_NONE) */
        int64_t mtime_ns;
        uint64_t unit;          /* slice granularity: max(page, block) */
        bool counted;           /* its hot bytes are in the hot set */
        bool in_quality;        /* one of its ranges had blocks: a file of the qualities */
        size_t queued;          /* a running executable: its entry in Plan.skipped (else SIZE_MAX) */
        Extent *ext;            /* where it is now */
        size_t n_ext;
} Cand;

/* One more range of a queued running executable (the whole file as one range: length 0). */
static int skip_add_range(PlanSkip *ps, const HotRange *hr, uint64_t size) {
        bool whole = hr->offset == 0 && hr->length >= size;

        if (GREEDY_REALLOC(ps->offsets, ps->allocated_offsets, ps->n_ranges + 1) < 0 ||
            GREEDY_REALLOC(ps->lengths, ps->allocated_lengths, ps->n_ranges + 1) < 0)
                return -ENOMEM;
        ps->offsets[ps->n_ranges] = whole ? 0 : hr->offset;
        ps->lengths[ps->n_ranges] = whole ? 0 : MIN(hr->length, size - hr->offset);
        ps->n_ranges++;
        return 0;
}

static void cands_free(Cand *c, size_t n) {
        for (size_t i = 0; c && i < n; i++)
                free(c[i].ext);
        free(c);
}

static int cmp_profiles(const void *a, const void *b) {
        const DbProfileInfo *x = a, *y = b;

        if (x->kind != y->kind)
                return x->kind == PROFILE_BOOT ? -1 : 1;
        /* the system's profiles before users': however often a user launches a program, it does not push
         * the system's out of the hot set */
        if (uid_is_system(x->uid) != uid_is_system(y->uid))
                return uid_is_system(x->uid) ? -1 : 1;
        /* launches ever recorded, not sessions kept (those are capped at KeepLaunches=) */
        if (x->n_launches != y->n_launches)
                return x->n_launches > y->n_launches ? -1 : 1;
        return strcmp(x->name, y->name);
}

static ssize_t fs_index(const FilesystemList *fss, char *const *mounts, uint64_t fsid) {
        for (size_t i = 0; i < fss->n; i++) {
                if (fss->items[i].fsid != fsid)
                        continue;
                if (!mounts)
                        return (ssize_t) i;
                for (size_t k = 0; mounts[k]; k++)
                        if (streq(mounts[k], fss->items[i].mount))
                                return (ssize_t) i;
                return -2;   /* on a filesystem not selected: not part of this plan */
        }
        return -1;
}

/* What planner_build() works with while it walks the profiles. */
typedef struct Planner {
        Db *db;
        const FilesystemList *fss;
        char *const *mounts;
        char *const *refusals;
        const PlanConfig *cfg;
        uint64_t now, page;
        Plan p;
        int *mount_fds;
        int64_t *placed;        /* file ids already placed, with their fs index */
        size_t n_placed, alloc_placed;
        LayoutWalker *fs_walkers;
        uint64_t *slot_base;
        InoSet running, swaps;
} Planner;

/* One profile while it is planned. */
typedef struct ProfilePass {
        PlanProfile *pp;
        DbProfileFile *files;
        size_t n_files;
        Cand *cand;
        HotRange *hot;
        size_t n_hot;
        size_t n_quality_files;
        LayoutWalker before, expected;
} ProfilePass;

/* The plan's filesystems: their mounts opened, their sizes and journals looked up. */
static int planner_open_filesystems(Planner *pl) {
        const FilesystemList *fss = pl->fss;
        Plan *p = &pl->p;

        p->fs = calloc(fss->n + 1, sizeof *p->fs);
        pl->mount_fds = calloc(fss->n + 1, sizeof *pl->mount_fds);
        pl->fs_walkers = calloc(fss->n + 1, sizeof *pl->fs_walkers);
        pl->slot_base = calloc(fss->n + 1, sizeof *pl->slot_base);
        if (!p->fs || !pl->mount_fds || !pl->fs_walkers || !pl->slot_base)
                return -ENOMEM;
        /* not yet opened: nothing for the cleanup to close (0 would be stdin) */
        for (size_t i = 0; i < fss->n; i++)
                pl->mount_fds[i] = -EBADF;
        p->n_fs = fss->n;
        for (size_t i = 0; i < fss->n; i++) {
                struct statfs sfs;
                pl->mount_fds[i] = open(fss->items[i].mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                p->fs[i].mount = strdup(fss->items[i].mount);
                p->fs[i].fsid = fss->items[i].fsid;
                p->fs[i].dev = fss->items[i].dev;
                if (!p->fs[i].mount)
                        return -ENOMEM;
                if (pl->mount_fds[i] >= 0 && fstatfs(pl->mount_fds[i], &sfs) >= 0)
                        p->fs[i].device_bytes = (uint64_t) sfs.f_blocks * (uint64_t) sfs.f_bsize;
                layout_walker_init(&pl->fs_walkers[i], p->fs[i].device_bytes);
                p->fs[i].journaled = fs_has_journal(fss->items[i].dev);
                /* expected placement: the donor lands somewhere; assume the middle of the device */
                pl->slot_base[i] = p->fs[i].device_bytes / 2;
        }
        return 0;
}

/* The first look at file k of the profile: can it move at all? A file an earlier profile had is only
 * located; any other is opened and checked, and skipped with a reason or made movable. */
static int plan_candidate(Planner *pl, ProfilePass *w, size_t k) {
        Plan *p = &pl->p;
        DbFile *f = &w->files[k].file;
        ssize_t fi = fs_index(pl->fss, pl->mounts, f->key.fsid);
        _cleanup_close_ int fd = -EBADF;
        Cand *c = &w->cand[k];
        char reason[128];
        bool retry = false, first_use = true;
        struct stat st;
        int r;

        if (pl->cfg->cancel && atomic_load(pl->cfg->cancel))
                return -ECANCELED;
        if (fi == -2)
                return 0;
        for (size_t q = 0; q < pl->n_placed; q++)
                if (pl->placed[q] == f->id)
                        first_use = false;
        if (first_use) {
                r = GREEDY_REALLOC(pl->placed, pl->alloc_placed, pl->n_placed + 1);
                if (r < 0)
                        return r;
                pl->placed[pl->n_placed++] = f->id;
        }
        if (fi < 0) {
                if (first_use)
                        (void) add_skip(p, f->path, "not on a watched read-write ext4 filesystem", false);
                return 0;
        }
        if (pl->refusals && pl->refusals[fi]) {
                if (first_use)
                        (void) add_skip(p, f->path, pl->refusals[fi], false);
                return 0;
        }
        if (!p->fs[fi].journaled) {
                if (first_use)
                        (void) add_skip(p, f->path, "filesystem has no journal: moving is not crash-safe there",
                                        false);
                return 0;
        }
        w->before.device_bytes = w->expected.device_bytes = p->fs[fi].device_bytes;
        fd = pl->mount_fds[fi] >= 0 ? file_key_open(pl->mount_fds[fi], &f->key, O_RDONLY | O_NONBLOCK)
                                    : -EBADF;
        if (fd < 0) {
                if (first_use)
                        (void) add_skip(p, f->path, fd == -ESTALE ? "gone or replaced since recording"
                                                                  : "cannot open", false);
                return 0;
        }
        if (first_use) {
                /* renamed since it was recorded: show it under its name now */
                _cleanup_free_ char *now_path = NULL;
                if (fd_get_verified_path(fd, &now_path) >= 0 && now_path && !streq(now_path, f->path)) {
                        free(f->path);
                        f->path = TAKE_PTR(now_path);
                }
        }
        c->fi = fi;
        c->state = CAND_SKIPPED;        /* where it is now counts for the qualities */
        c->queued = SIZE_MAX;
        if (fiemap_get(fd, &c->ext, &c->n_ext) < 0)
                c->n_ext = 0;
        if (!first_use) {
                c->state = CAND_PLACED;
                return 0;
        }

        if (fstat(fd, &st) < 0)
                return -errno;
        /* its ranges are cut at its size now */
        f->size = (uint64_t) st.st_size;
        if (ino_set_has(&pl->swaps, st.st_dev, st.st_ino)) {
                (void) add_skip(p, f->path, "active swap file", false);
                return 0;
        }
        if (ino_set_has(&pl->running, st.st_dev, st.st_ino)) {
                if (add_skip(p, f->path, "running executable (queued for a later pass)", true) >= 0) {
                        PlanSkip *ps = &p->skipped[p->n_skipped - 1];

                        c->queued = p->n_skipped - 1;
                        ps->file_id = f->id;
                        ps->fs = (size_t) fi;
                        ps->size = (uint64_t) st.st_size;
                        ps->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
                }
                return 0;
        }
        r = planner_check_fd(fd, pl->cfg, pl->now, reason, sizeof reason, &retry);
        if (r < 0) {
                snprintf(reason, sizeof reason, "cannot inspect: %s", strerror(-r));
                r = 1;
        }
        if (r > 0) {
                (void) add_skip(p, f->path, reason, retry);
                return 0;
        }
        c->state = CAND_MOVABLE;
        c->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        /* the donor takes each range rounded up to a page (and block) */
        c->unit = MAX(pl->page, (uint64_t) st.st_blksize);
        return 0;
}

/* A movable file's hot bytes are counted, against both limits, at its first range: past one, it is
 * skipped with why and stays where it is. */
static void plan_admit(Planner *pl, ProfilePass *w, Cand *c, const DbFile *f, const HotRange *hr) {
        Plan *p = &pl->p;
        const PlanConfig *cfg = pl->cfg;
        uint64_t cap = MIN(cfg->max_hot_set_bytes, p->fs[c->fi].device_bytes / 20);
        uint64_t hot_bytes = hot_ranges_file_bytes(w->hot, w->n_hot, hr->file, c->unit);
        HotAdmit a = hot_ranges_admit(hot_bytes, cfg->max_file_bytes, p->fs[c->fi].slices, cap);
        char reason[128];

        if (a == HOT_TOO_LARGE) {
                snprintf(reason, sizeof reason, "%s than MaxFileMiB=%" PRIu64,
                         hot_bytes < f->size ? "hot part larger" : "larger",
                         cfg->max_file_bytes >> 20);
                (void) add_skip(p, f->path, reason, false);
                c->state = CAND_SKIPPED;
        } else if (a == HOT_SET_FULL) {
                snprintf(reason, sizeof reason,
                         "hot set full (MaxHotSetMiB=%" PRIu64 ", at most 5%% of the filesystem)",
                         cfg->max_hot_set_bytes >> 20);
                (void) add_skip(p, f->path, reason, false);
                c->state = CAND_SKIPPED;
        } else {
                p->fs[c->fi].slices += hot_bytes;
                c->counted = true;
        }
}

/* A range of a movable file joins its filesystem's plan, in its slot after the ranges before it; the plan
 * takes *ext. */
static int plan_append(Planner *pl, ProfilePass *w, const Cand *c, const DbFile *f, const HotRange *hr,
                       Extent **ext, size_t n_ext) {
        FsPlan *fp = &pl->p.fs[c->fi];
        /* the whole file as one range: a whole-file item, as the mover always took them */
        bool whole = hr->offset == 0 && hr->length >= f->size;
        PlanFile *nf;

        if (GREEDY_REALLOC(fp->files, fp->allocated_files, fp->n_files + 1) < 0)
                return -ENOMEM;
        nf = fp->files;
        nf[fp->n_files] = (PlanFile) {
                .file_id = f->id,
                .path = strdup(f->path),
                .profile = w->pp->name,
                .key = f->key,
                .size = f->size,
                .mtime_ns = c->mtime_ns,
                .offset = whole ? 0 : hr->offset,
                .length = whole ? 0 : MIN(hr->length, f->size - hr->offset),
        };
        if (!nf[fp->n_files].path)
                return -ENOMEM;
        uint64_t bytes = plan_file_bytes(&nf[fp->n_files]);
        Extent e = { .physical = pl->slot_base[c->fi] + fp->bytes, .length = bytes };
        layout_walker_add_file(&w->expected, &e, 1);
        layout_walker_add_file(&pl->fs_walkers[c->fi], *ext, n_ext);
        nf[fp->n_files].extents = TAKE_PTR(*ext);
        nf[fp->n_files].n_extents = n_ext;
        fp->n_files++;
        fp->bytes += bytes;
        return 0;
}

/* One hot range of the profile, in the order the donor receives them: where it is now counts for the
 * quality before, where it will be for the quality expected; a movable file's range joins the plan. */
static int plan_range(Planner *pl, ProfilePass *w, const HotRange *hr) {
        Cand *c = &w->cand[hr->file];
        DbFile *f = &w->files[hr->file].file;
        _cleanup_free_ Extent *ext = NULL;
        size_t n_ext = 0;
        int r;

        if (c->state == CAND_NONE)
                return 0;
        if (c->queued != SIZE_MAX) {
                r = skip_add_range(&pl->p.skipped[c->queued], hr, f->size);
                if (r < 0)
                        return r;
        }
        r = hot_ranges_clip_extents(c->ext, c->n_ext, hr->offset, hr->length, &ext, &n_ext);
        if (r < 0)
                return r;
        layout_walker_add_file(&w->before, ext, n_ext);
        if (!c->in_quality)
                for (size_t x = 0; x < n_ext && !c->in_quality; x++)
                        if (layout_extent_has_blocks(&ext[x])) {
                                c->in_quality = true;
                                w->n_quality_files++;
                        }
        if (c->state == CAND_PLACED) {
                /* placed by an earlier profile: its expected position is its slot there */
                const FsPlan *fp = &pl->p.fs[c->fi];
                uint64_t off = pl->slot_base[c->fi];
                size_t q = 0;

                while (q < fp->n_files && fp->files[q].file_id != f->id)
                        off += plan_file_bytes(&fp->files[q++]);
                if (q < fp->n_files) {
                        Extent e = { .physical = off, .length = hr->length };
                        layout_walker_add_file(&w->expected, &e, 1);
                } else
                        layout_walker_add_file(&w->expected, ext, n_ext);
                return 0;
        }
        if (c->state == CAND_MOVABLE) {
                /* a range of holes only (a hole read as zeros is a page like any other):
                 * nothing to move there */
                bool blocks = false;

                for (size_t x = 0; x < n_ext && !blocks; x++)
                        blocks = layout_extent_has_blocks(&ext[x]);
                if (!blocks)
                        return 0;
        }
        if (c->state == CAND_MOVABLE && !c->counted)
                plan_admit(pl, w, c, f, hr);
        if (c->state != CAND_MOVABLE) {
                layout_walker_add_file(&w->expected, ext, n_ext);
                return 0;
        }
        return plan_append(pl, w, c, f, hr, &ext, n_ext);
}

/* One profile into the plan: each of its files once, then its hot ranges, then its qualities. */
static int plan_profile(Planner *pl, const DbProfileInfo *info) {
        _cleanup_free_ DbProfileRange *ranges = NULL;
        _cleanup_free_ uint64_t *sizes = NULL;
        ProfilePass w = { .pp = &pl->p.profiles[pl->p.n_profiles] };
        size_t n_ranges = 0;
        int r;

        r = db_get_profile(pl->db, info->name, NULL, &w.files, &w.n_files);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        w.pp->name = strdup(info->name);
        w.pp->kind = info->kind;
        w.cand = calloc(w.n_files + 1, sizeof *w.cand);
        sizes = calloc(w.n_files + 1, sizeof *sizes);
        if (!w.pp->name || !w.cand || !sizes) {
                r = -ENOMEM;
                goto finish;
        }
        pl->p.n_profiles++;
        layout_walker_init(&w.before, pl->fss->n > 0 ? pl->p.fs[0].device_bytes : 0);
        layout_walker_init(&w.expected, pl->fss->n > 0 ? pl->p.fs[0].device_bytes : 0);

        /* First each file once: can it move at all? */
        for (size_t k = 0; k < w.n_files; k++) {
                r = plan_candidate(pl, &w, k);
                if (r < 0)
                        goto finish;
        }

        /* Then its ranges, in the order the donor receives them, cut at the files' sizes now
         * (a profile forgotten since db_get_profile(): its files whole) */
        r = db_get_profile_ranges(pl->db, info->name, w.files, w.n_files, &ranges, &n_ranges);
        if (r == -ENOENT)
                r = hot_ranges_whole(w.files, w.n_files, &ranges, &n_ranges);
        if (r < 0)
                goto finish;
        for (size_t k = 0; k < w.n_files; k++)
                sizes[k] = w.files[k].file.size;
        r = hot_ranges_glue(ranges, n_ranges, sizes, w.n_files, pl->page, &w.hot, &w.n_hot);
        if (r < 0)
                goto finish;
        for (size_t h = 0; h < w.n_hot; h++) {
                r = plan_range(pl, &w, &w.hot[h]);
                if (r < 0)
                        goto finish;
        }
        layout_walker_finish(&w.before, &w.pp->before);
        layout_walker_finish(&w.expected, &w.pp->expected);
        /* the walkers count each range as a file: the qualities count files */
        w.pp->before.files = w.pp->expected.files = w.n_quality_files;
        r = 0;
finish:
        free(w.hot);
        cands_free(w.cand, w.n_files);
        db_profile_files_free(w.files, w.n_files);
        return r;
}

/* Each filesystem once all profiles are in: is it, or are some of its profiles, already in place? */
static int planner_settle_filesystems(Planner *pl, const uint64_t *allowed_breaks) {
        Plan *p = &pl->p;
        int r;

        for (size_t i = 0; i < p->n_fs; i++) {
                layout_walker_finish(&pl->fs_walkers[i], &p->fs[i].before);
                /* Already laid out as a run would lay it out (up to the breaks the last run could not
                 * avoid): moving again would only rewrite data for nothing. */
                uint64_t allowed = allowed_breaks ? allowed_breaks[i] : 0;

                if (p->fs[i].n_files > 0) {
                        p->fs[i].in_place = layout_breaks(&p->fs[i]) <= allowed;
                        if (!p->fs[i].in_place) {
                                p->fs[i].n_in_place = drop_in_place_profiles(&p->fs[i], allowed);
                                p->fs[i].in_place = p->fs[i].n_files == 0;
                        }
                }
                if (p->fs[i].n_files == 0 || p->fs[i].in_place) {
                        r = keep_settled_executables(pl->db, p, i);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static void planner_done(Planner *pl) {
        for (size_t i = 0; pl->mount_fds && i < pl->fss->n; i++)
                safe_close(pl->mount_fds[i]);
        free(pl->mount_fds);
        free(pl->placed);
        free(pl->fs_walkers);
        free(pl->slot_base);
        ino_set_done(&pl->running);
        ino_set_done(&pl->swaps);
        plan_done(&pl->p);
}

int planner_build(Db *db, const FilesystemList *fss, char *const *mounts, const PlanConfig *cfg,
                  const uint64_t *allowed_breaks, char *const *refusals, Plan *ret) {
        _cleanup_free_ DbProfileInfo *infos = NULL;
        Planner pl = {
                .db = db,
                .fss = fss,
                .mounts = mounts,
                .refusals = refusals,
                .cfg = cfg,
                .now = now_usec(CLOCK_REALTIME),
                .page = (uint64_t) sysconf(_SC_PAGESIZE),
        };
        size_t n_infos = 0;
        int r;

        r = db_list_profiles(db, &infos, &n_infos);
        if (r < 0)
                return r;
        qsort_safe(infos, n_infos, sizeof *infos, cmp_profiles);

        pl.p.profiles = calloc(n_infos + 1, sizeof *pl.p.profiles);
        r = pl.p.profiles ? planner_open_filesystems(&pl) : -ENOMEM;
        if (r < 0)
                goto finish;

        ino_set_add_running_executables(&pl.running);
        ino_set_add_swap_files(&pl.swaps);

        for (size_t pi = 0; pi < n_infos; pi++) {
                r = plan_profile(&pl, &infos[pi]);
                if (r < 0)
                        goto finish;
        }
        r = planner_settle_filesystems(&pl, allowed_breaks);
        if (r < 0)
                goto finish;
        *ret = pl.p;
        pl.p = (Plan) {};
finish:
        db_profile_infos_free(TAKE_PTR(infos), n_infos);
        planner_done(&pl);
        return r;
}
