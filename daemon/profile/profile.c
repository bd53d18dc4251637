/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fid-util.h"
#include "common/macro.h"
#include "profile/profile.h"
#include "profile/rank.h"
#include "fs/resident.h"

static void note(const ProfileOptions *o, ProfileNote n) {
        if (o->note)
                o->note(&n, o->userdata);
}

static unsigned keep_of(const ProfileOptions *o, ProfileKind kind) {
        return kind == PROFILE_BOOT ? o->keep_boots : o->keep_launches;
}

static int64_t mtime_ns(const struct stat *st) {
        return (int64_t) st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

static bool sorted_contains(const int64_t *ids, size_t n, int64_t id) {
        return n > 0 && bsearch_safe(&id, ids, n, sizeof id, cmp_int64);
}

void profile_session_files_done(ProfileSessionFiles *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->paths[i]);
        free(f->paths);
        free(f->files);
        free(f->index);
        free(f->warm);
        *f = (ProfileSessionFiles) {};
}

int profile_resolve_session(const Session *s, const ProfileOptions *o, ProfileSessionFiles *ret) {
        _cleanup_(profile_session_files_done) ProfileSessionFiles out = {};
        _cleanup_(mount_fds_done) MountFds fds = { .open = o->open_mount, .userdata = o->userdata };
        _cleanup_free_ uint64_t *seen = NULL;     /* pages the session saw read, per file */
        uint64_t walk_budget = RESIDENT_WALK_PAGES;

        out.files = calloc(s->n_files + 1, sizeof *out.files);
        out.paths = calloc(s->n_files + 1, sizeof *out.paths);
        out.index = calloc(s->n_files + 1, sizeof *out.index);
        out.warm = calloc(s->n_files + 1, sizeof *out.warm);
        seen = calloc(s->n_files + 1, sizeof *seen);
        if (!out.files || !out.paths || !out.index || !out.warm || !seen)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_files; i++)
                out.index[i] = SIZE_MAX;
        for (size_t i = 0; i < s->n_touches; i++)
                if (s->touches[i].file < s->n_files)
                        seen[s->touches[i].file] += s->touches[i].n_pages;

        for (size_t i = 0; i < s->n_files; i++) {
                const SessionFile *sf = &s->files[i];
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int ffd = -EBADF;
                struct stat st;
                int fd = mount_fds_get(&fds, sf->key.fsid), r = 0;

                if (fd < 0) {
                        note(o, (ProfileNote) { .kind = PROFILE_NOTE_UNREACHABLE, .fsid = sf->key.fsid,
                                                .error = fd });
                        continue;
                }
                if (seen[i] > 0) {
                        /* Opened for reading once, for the checks and for the residency below. Pages went
                         * into its own page cache: a regular file (a device's pages are the device's), which
                         * opening sets nothing off in. Where that open fails (a lease, say), by O_PATH. */
                        ffd = file_key_open(fd, &sf->key, O_RDONLY | O_NONBLOCK);
                        r = ffd >= 0 ? file_key_check_fd(ffd, &st, &path) : ffd;
                }
                if (ffd < 0 && r != -ESTALE)
                        r = file_key_resolve(fd, &sf->key, &st, &path);
                if (r >= 0 && !path && sf->path)
                        /* the kernel can't name it any more, but it could shortly after the read */
                        path = session_path(s, i);
                if (r >= 0 && !path && sf->where)
                        /* not named before its dentry was evicted: through the directory it was read in */
                        (void) file_key_name_in_dir(fd, &sf->where->dir, sf->where->name, &st, &path);
                if (r < 0 || !path) {
                        /* gone, not a regular file, or no name we can trust */
                        note(o, (ProfileNote) { .kind = PROFILE_NOTE_LEFT_OUT, .index = i, .error = r });
                        continue;
                }
                out.files[out.n] = (DbSessionFile) {
                        .key = sf->key,
                        .dev = st.st_dev,
                        .path = path,
                        .size = st.st_size,
                        .mtime_ns = mtime_ns(&st),
                        .offset_usec = sf->offset_usec,
                };
                file_key_ino_gen(&sf->key, &out.files[out.n].ino, &out.files[out.n].generation);
                if (seen[i] > 0 && !s->uses && !s->prefetched) {
                        /* A page already cached when the window opened was read without an event: if more
                         * of the file is cached now than the session saw read, its ranges are only the part
                         * that was missing. (Pages read by others meanwhile count against it too: then the
                         * file is taken whole, which is the safe side.) Not in a prefetched start, whose
                         * files are cached by the prefetch: what it saw read is what the prefetch missed,
                         * and the profile keeps its newest start that was not prefetched (db_add_session()),
                         * whose ranges the merge adds to these. */
                        uint64_t resident;

                        if (ffd >= 0 && file_resident_pages(ffd, (uint64_t) st.st_size, &walk_budget, &resident) >= 0 &&
                            resident > seen[i]) {
                                out.warm[i] = true;
                                out.n_warm++;
                        }
                }
                out.index[i] = out.n;
                out.paths[out.n++] = TAKE_PTR(path);
        }

        *ret = out;
        out = (ProfileSessionFiles) {};
        return 0;
}

int profile_session_ranges(const Session *s, const ProfileSessionFiles *f, DbSessionRange **ret, size_t *ret_n) {
        _cleanup_free_ DbSessionRange *out = NULL;
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!s->pages || s->n_touches == 0)
                return 0;
        out = calloc(s->n_touches, sizeof *out);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_touches; i++) {
                const SessionRange *t = &s->touches[i];

                /* a file left out by the resolution takes its ranges with it; a warm one has none */
                if (t->file >= s->n_files || !f->index || f->index[t->file] == SIZE_MAX ||
                    (f->warm && f->warm[t->file]))
                        continue;
                out[n++] = (DbSessionRange) {
                        .file = f->index[t->file],
                        .offset = t->first_page * page,
                        .length = t->n_pages * page,
                        .offset_usec = t->offset_usec,
                };
        }
        *ret_n = n;
        *ret = TAKE_PTR(out);
        return 0;
}

int profile_session_metadata(const Session *s, DbMetaRange **ret, size_t *ret_n) {
        _cleanup_free_ DbMetaRange *out = NULL;
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

        *ret = NULL;
        *ret_n = 0;
        if (s->n_meta == 0)
                return 0;
        out = calloc(s->n_meta, sizeof *out);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_meta; i++)
                out[i] = (DbMetaRange) {
                        .fsid = s->meta[i].fsid,
                        .offset = s->meta[i].first_page * page,
                        .length = s->meta[i].n_pages * page,
                        .offset_usec = s->meta[i].offset_usec,
                };
        *ret_n = s->n_meta;
        *ret = TAKE_PTR(out);
        return 0;
}

int profile_store_session(Db *db, const Session *s, const ProfileSessionFiles *f, uint64_t now_usec,
                          const ProfileOptions *o, int64_t *ret_session_id) {
        _cleanup_free_ DbSessionRange *ranges = NULL;
        _cleanup_free_ DbMetaRange *meta = NULL;
        size_t n_ranges = 0, n_meta = 0;
        int64_t id;
        int r;

        if (s->kind == PROFILE_APP && f->n < o->min_launch_files)
                return 0;
        if (s->kind == PROFILE_BOOT && f->n == 0)
                return 0;
        r = profile_session_ranges(s, f, &ranges, &n_ranges);
        if (r < 0)
                return r;
        /* the metadata a prefetched start read is only what the prefetch did not (reads of the device's
         * cached pages have no event on any kernel): the profile keeps its newest cold session's */
        if (!s->prefetched) {
                r = profile_session_metadata(s, &meta, &n_meta);
                if (r < 0)
                        return r;
        }

        r = db_add_session(db, &(DbSession) {
                        .profile = s->profile,
                        .kind = s->kind,
                        .boot_id = o->boot_id,
                        .started_realtime_usec = s->start_realtime_usec,
                        .duration_usec = now_usec - s->start_usec,
                        .complete = !s->incomplete,
                        .prefetched = s->prefetched,
                        .uid = s->uid,
                        .files = f->files,
                        .n_files = f->n,
                        .ranges = ranges,
                        .n_ranges = n_ranges,
                        .meta = meta,
                        .n_meta = n_meta,
                }, keep_of(o, s->kind), &id);
        if (r < 0)
                return r;
        *ret_session_id = id;
        return 1;
}

/* Checks each file of the merge input by its handle but those of the fresh session (sorted ids): deletes
 * the vanished ones from the database, their ids going to *ret_dropped (sorted), and updates the renamed
 * or resized ones. */
static int merge_check_files(Db *db, const DbMergeInput *in, const int64_t *fresh, size_t n_fresh,
                             const ProfileOptions *o, int64_t **ret_dropped, size_t *ret_n_dropped) {
        _cleanup_(mount_fds_done) MountFds fds = { .open = o->open_mount, .userdata = o->userdata };
        _cleanup_free_ int64_t *dropped = NULL;
        size_t n_dropped = 0;

        dropped = calloc(in->n_files + 1, sizeof *dropped);
        if (!dropped)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_files; i++) {
                const DbFile *f = &in->files[i];
                _cleanup_free_ char *path = NULL;
                struct stat st;
                int fd, r;

                if (sorted_contains(fresh, n_fresh, f->id))
                        continue;
                fd = mount_fds_get(&fds, f->key.fsid);
                if (fd < 0)
                        continue;
                r = file_key_resolve(fd, &f->key, &st, &path);
                if (r == -ESTALE || r == -EBADE) {
                        note(o, (ProfileNote) { .kind = PROFILE_NOTE_DROPPED, .path = f->path });
                        r = db_delete_file(db, f->id);
                        if (r < 0)
                                note(o, (ProfileNote) { .kind = PROFILE_NOTE_DROP_FAILED, .path = f->path,
                                                        .error = r });
                        dropped[n_dropped++] = f->id;
                } else if (r >= 0 && ((path && !streq(path, f->path)) || (uint64_t) st.st_size != f->size)) {
                        r = db_update_file(db, f->id, path ?: f->path, st.st_size, mtime_ns(&st));
                        if (r < 0)
                                note(o, (ProfileNote) { .kind = PROFILE_NOTE_UPDATE_FAILED, .path = path,
                                                        .error = r });
                }
        }
        qsort_safe(dropped, n_dropped, sizeof *dropped, cmp_int64);
        *ret_dropped = TAKE_PTR(dropped);
        *ret_n_dropped = n_dropped;
        return 0;
}

int profile_merge(Db *db, const char *profile, ProfileKind kind, int64_t fresh_session_id,
                  const ProfileOptions *o) {
        _cleanup_(db_merge_input_free) DbMergeInput in = {};
        _cleanup_free_ int64_t *fresh = NULL, *dropped = NULL, *kept = NULL;
        _cleanup_free_ RankSession *rs = NULL;
        _cleanup_free_ RankResult *res = NULL;
        _cleanup_free_ DbProfileEntry *entries = NULL;
        _cleanup_free_ RankRangeSession *rrs = NULL;
        _cleanup_free_ RankRange *kept_ranges = NULL, *ranges = NULL;
        _cleanup_free_ DbRange *db_ranges = NULL;
        size_t n_fresh = 0, n_dropped = 0, n_all = 0, n_all_ranges = 0, k = 0;
        int n, n_ranges, r;

        r = db_load_merge_input(db, profile, keep_of(o, kind), &in);
        if (r < 0)
                return r;

        /* The newest session is the one just stored: its files were opened by their handles a moment ago. */
        if (fresh_session_id > 0 && in.n_sessions > 0 && in.session_ids[0] == fresh_session_id) {
                n_fresh = in.n_session_files[0];
                fresh = calloc(n_fresh + 1, sizeof *fresh);
                if (!fresh)
                        return -ENOMEM;
                memcpy(fresh, in.session_files[0], n_fresh * sizeof *fresh);
                qsort_safe(fresh, n_fresh, sizeof *fresh, cmp_int64);
        }
        r = merge_check_files(db, &in, fresh, n_fresh, o, &dropped, &n_dropped);
        if (r < 0)
                return r;

        /* Every session without the dropped files, all in one array. */
        for (size_t s = 0; s < in.n_sessions; s++)
                n_all += in.n_session_files[s];
        rs = calloc(in.n_sessions + 1, sizeof *rs);
        kept = calloc(n_all + 1, sizeof *kept);
        if (!rs || !kept)
                return -ENOMEM;
        for (size_t s = 0; s < in.n_sessions; s++) {
                rs[s].file_ids = kept + k;
                for (size_t i = 0; i < in.n_session_files[s]; i++)
                        if (!sorted_contains(dropped, n_dropped, in.session_files[s][i]))
                                kept[k++] = in.session_files[s][i];
                rs[s].n_files = (size_t) (kept + k - rs[s].file_ids);
        }

        /* Their ranges the same way. */
        for (size_t s = 0; s < in.n_sessions; s++)
                n_all_ranges += in.n_session_ranges[s];
        rrs = calloc(in.n_sessions + 1, sizeof *rrs);
        kept_ranges = calloc(n_all_ranges + 1, sizeof *kept_ranges);
        if (!rrs || !kept_ranges)
                return -ENOMEM;
        k = 0;
        for (size_t s = 0; s < in.n_sessions; s++) {
                rrs[s].ranges = kept_ranges + k;
                for (size_t i = 0; i < in.n_session_ranges[s]; i++) {
                        const DbRange *dr = in.session_ranges[s] + i;

                        if (!sorted_contains(dropped, n_dropped, dr->file_id))
                                kept_ranges[k++] = (RankRange) { .file_id = dr->file_id, .offset = dr->offset,
                                                                 .length = dr->length };
                }
                rrs[s].n_ranges = (size_t) (kept_ranges + k - rrs[s].ranges);
        }

        n = rank_merge(rs, in.n_sessions, &res);
        if (n < 0)
                return n;
        n_ranges = rank_merge_ranges(rs, rrs, in.n_sessions, res, (size_t) n, &ranges);
        if (n_ranges < 0)
                return n_ranges;
        entries = calloc((size_t) n + 1, sizeof *entries);
        db_ranges = calloc((size_t) n_ranges + 1, sizeof *db_ranges);
        if (!entries || !db_ranges)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                entries[i] = (DbProfileEntry) { .file_id = res[i].file_id, .score = res[i].score,
                                                .seen = res[i].seen };
        for (int i = 0; i < n_ranges; i++)
                db_ranges[i] = (DbRange) { .file_id = ranges[i].file_id, .offset = ranges[i].offset,
                                           .length = ranges[i].length };
        return db_store_profile_ranges(db, profile, entries, (size_t) n, db_ranges, (size_t) n_ranges);
}

void profile_refresh_paths(DbProfileFile *f, size_t n, const ProfileOptions *o) {
        _cleanup_(mount_fds_done) MountFds fds = { .open = o->open_mount, .userdata = o->userdata };

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                int fd = mount_fds_get(&fds, f[i].file.key.fsid);

                if (fd >= 0 && file_key_resolve(fd, &f[i].file.key, NULL, &path) >= 0 && path &&
                    !streq(path, f[i].file.path)) {
                        free(f[i].file.path);
                        f[i].file.path = TAKE_PTR(path);
                }
        }
}
