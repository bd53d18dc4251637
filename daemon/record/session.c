/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc-util.h"
#include "record/session.h"

/* The hash tables (files by key, inodes, directories of paths) take any size: a bucket is the hash scaled to the table, so they
 * grow by half at three quarters full (a table is 1.33-2 entries per item, 4 to 8 before). */
#define TABLE_MIN 64

static size_t table_grow(size_t n_buckets) {
        return n_buckets ? n_buckets + n_buckets / 2 : TABLE_MIN;
}

static bool table_full(size_t n_items, size_t n_buckets) {
        return (n_items + 1) * 4 > n_buckets * 3;
}

static size_t table_bucket(uint64_t h, size_t n_buckets) {
        h ^= h >> 31;           /* mixed, as the scaling below takes the high bits */
        h *= 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
        return (size_t) (((h >> 32) * (uint64_t) n_buckets) >> 32);
}

static size_t table_next(size_t b, size_t n_buckets) {
        return b + 1 < n_buckets ? b + 1 : 0;
}

int session_new(ProfileKind kind, const char *profile, uint64_t now_usec, uint64_t window_usec, Session **ret) {
        _cleanup_(session_freep) Session *s = NULL;
        struct timespec ts;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->kind = kind;
        s->profile = strdup(profile);
        if (!s->profile)
                return -ENOMEM;
        s->start_usec = now_usec;
        s->max_ranges = session_max_ranges(kind, SESSION_MAX_RANGES);
        s->deadline_usec = now_usec + window_usec;
        clock_gettime(CLOCK_REALTIME, &ts);
        s->start_realtime_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
        *ret = TAKE_PTR(s);
        return 0;
}

Session *session_free(Session *s) {
        if (!s)
                return NULL;
        free(s->profile);
        free(s->cgroup);
        for (size_t i = 0; i < s->n_files; i++)
                free(s->files[i].where);
        free(s->paths.dirs);
        free(s->paths.dir_index);
        free(s->paths.names);
        for (size_t i = 0; i < s->n_seen_files; i++)
                if (s->seen[i].allocated > 0)
                        free(s->seen[i].spans);
        free(s->seen);
        free(s->files);
        free(s->touches);
        free(s->meta);
        for (size_t i = 0; i < s->n_inode_devs; i++)
                free(s->inodes[i].t);
        free(s->inodes);
        free(s->index);
        free(s);
        return NULL;
}

static size_t bucket_of(const Session *s, const FileKey *key) {
        return table_bucket(file_key_hash(key), s->n_buckets);
}

static ssize_t find(const Session *s, const FileKey *key, size_t *ret_bucket) {
        size_t b;

        if (s->n_buckets == 0)
                return -1;
        for (b = bucket_of(s, key); s->index[b] != 0; b = table_next(b, s->n_buckets))
                if (file_key_equal(&s->files[s->index[b] - 1].key, key))
                        return (ssize_t) s->index[b] - 1;
        if (ret_bucket)
                *ret_bucket = b;
        return -1;
}

static int rehash(Session *s, size_t n_buckets) {
        uint32_t *index = calloc(n_buckets, sizeof *index);

        if (!index)
                return -ENOMEM;
        free(s->index);
        s->index = index;
        s->n_buckets = n_buckets;
        for (size_t i = 0; i < s->n_files; i++) {
                size_t b = bucket_of(s, &s->files[i].key);
                while (s->index[b] != 0)
                        b = table_next(b, n_buckets);
                s->index[b] = (uint32_t) i + 1;
        }
        return 0;
}

bool session_contains(const Session *s, const FileKey *key) {
        return find(s, key, NULL) >= 0;
}

ssize_t session_index(const Session *s, const FileKey *key) {
        ssize_t i = find(s, key, NULL);
        return i >= 0 ? i : -ENOENT;
}

/* The file's index, added when new (*ret_new). -ENOSPC: left out, the session holds max_files already
 * (marked full and incomplete); -ENOMEM. */
static ssize_t add_file(Session *s, const FileKey *key, uint64_t now_usec, bool *ret_new) {
        ssize_t i;
        size_t b;
        int r;

        assert(!s->sealed);
        *ret_new = false;
        i = find(s, key, &b);
        if (i >= 0)
                return i;
        if (s->max_files > 0 && s->n_files >= s->max_files) {
                s->full = s->incomplete = true;
                return -ENOSPC;
        }

        if (table_full(s->n_files, s->n_buckets)) {
                r = rehash(s, table_grow(s->n_buckets));
                if (r < 0)
                        return r;
                (void) find(s, key, &b);
        }
        if (GREEDY_REALLOC(s->files, s->allocated, s->n_files + 1) < 0)
                return -ENOMEM;
        s->files[s->n_files] = (SessionFile) {
                .key = *key,
                .offset_usec = now_usec > s->start_usec ? now_usec - s->start_usec : 0,
        };
        s->n_files++;
        s->index[b] = (uint32_t) s->n_files;
        *ret_new = true;
        return (ssize_t) s->n_files - 1;
}

/* Appends n bytes to a buffer of the path store, at most 4 GiB (places are 32 bits): their place. */
static int store_append(char **buf, size_t *n_bytes, size_t *allocated, const void *p, size_t n) {
        if (n == 0)
                return 0;       /* the root's directory "": nothing to copy (the buffer may not exist yet) */
        if (*n_bytes + n > UINT32_MAX - 1)
                return -EFBIG;
        if (*n_bytes + n > *allocated) {
                size_t na = MAX(*n_bytes + n, *allocated ? *allocated * 2 : 4096);
                char *b = realloc(*buf, na);

                if (!b)
                        return -ENOMEM;
                *buf = b;
                *allocated = na;
        }
        memcpy(*buf + *n_bytes, p, n);
        *n_bytes += n;
        return 0;
}

static uint64_t bytes_hash(const char *p, size_t n) {
        uint64_t h = 1469598103934665603ULL;

        for (size_t i = 0; i < n; i++)
                h = (h ^ (uint8_t) p[i]) * 1099511628211ULL;
        return h;
}

static bool dir_at(const PathStore *ps, uint32_t place, const char *dir, size_t len) {
        return strncmp(ps->dirs + place, dir, len) == 0 && ps->dirs[place + len] == 0;
}

/* The place of the directory dir[0..len) in the store, added if new; or negative errno. */
static int64_t store_dir(PathStore *ps, const char *dir, size_t len) {
        size_t b;
        uint32_t place;
        int r;

        if (ps->n_dir_buckets > 0)
                for (b = table_bucket(bytes_hash(dir, len), ps->n_dir_buckets); ps->dir_index[b] != 0;
                     b = table_next(b, ps->n_dir_buckets))
                        if (dir_at(ps, ps->dir_index[b] - 1, dir, len))
                                return ps->dir_index[b] - 1;
        if (table_full(ps->n_dirs, ps->n_dir_buckets)) {
                size_t nb = table_grow(ps->n_dir_buckets);
                uint32_t *t = calloc(nb, sizeof *t);

                if (!t)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n_dir_buckets; i++) {
                        uint32_t v = ps->dir_index[i];

                        if (v == 0)
                                continue;
                        b = table_bucket(bytes_hash(ps->dirs + v - 1, strlen(ps->dirs + v - 1)), nb);
                        while (t[b] != 0)
                                b = table_next(b, nb);
                        t[b] = v;
                }
                free(ps->dir_index);
                ps->dir_index = t;
                ps->n_dir_buckets = nb;
        }
        place = (uint32_t) ps->n_dirs_bytes;
        r = store_append(&ps->dirs, &ps->n_dirs_bytes, &ps->allocated_dirs_bytes, dir, len);
        if (r >= 0)
                r = store_append(&ps->dirs, &ps->n_dirs_bytes, &ps->allocated_dirs_bytes, "", 1);
        if (r < 0) {
                ps->n_dirs_bytes = place;
                return r;
        }
        for (b = table_bucket(bytes_hash(dir, len), ps->n_dir_buckets); ps->dir_index[b] != 0;
             b = table_next(b, ps->n_dir_buckets))
                ;
        ps->dir_index[b] = place + 1;
        ps->n_dirs++;
        return place;
}

int session_set_path(Session *s, size_t file, const char *path) {
        PathStore *ps = &s->paths;
        const char *slash;
        uint32_t dir = UINT32_MAX, place;
        const char *name = path;
        int r;

        assert(file < s->n_files && !s->sealed);
        s->files[file].path = 0;
        if (!path)
                return 0;
        slash = strrchr(path, '/');
        if (slash) {
                int64_t d = store_dir(ps, path, (size_t) (slash - path));

                if (d < 0)
                        return (int) d;
                dir = (uint32_t) d;
                name = slash + 1;
        }
        place = (uint32_t) ps->n_names_bytes;
        r = store_append(&ps->names, &ps->n_names_bytes, &ps->allocated_names_bytes, &dir, sizeof dir);
        if (r >= 0)
                r = store_append(&ps->names, &ps->n_names_bytes, &ps->allocated_names_bytes, name, strlen(name) + 1);
        if (r < 0) {
                ps->n_names_bytes = place;
                return r;
        }
        s->files[file].path = place + 1;
        return 0;
}

char *session_path(const Session *s, size_t file) {
        const PathStore *ps = &s->paths;
        const char *name;
        uint32_t dir;
        char *p;

        assert(file < s->n_files);
        if (s->files[file].path == 0)
                return NULL;
        memcpy(&dir, ps->names + s->files[file].path - 1, sizeof dir);
        name = ps->names + s->files[file].path - 1 + sizeof dir;
        if (dir == UINT32_MAX)
                return strdup(name);
        if (asprintf(&p, "%s/%s", ps->dirs + dir, name) < 0)
                return NULL;
        return p;
}

static int note_where(Session *s, size_t i, const FileKey *dir, const char *name) {
        SessionFile *f = &s->files[i];
        size_t n;

        if (f->path || f->where)
                return 0;
        n = strlen(name);
        if (n == 0 || memchr(name, '/', n))
                return -EINVAL;
        f->where = malloc(sizeof *f->where + n + 1);
        if (!f->where)
                return -ENOMEM;
        f->where->dir = *dir;
        memcpy(f->where->name, name, n + 1);
        return 0;
}

int session_add(Session *s, const FileKey *key, uint64_t now_usec) {
        return session_add_where(s, key, now_usec, NULL, NULL);
}

int session_add_where(Session *s, const FileKey *key, uint64_t now_usec, const FileKey *dir, const char *name) {
        bool added;
        ssize_t i = add_file(s, key, now_usec, &added);

        if (i == -ENOSPC)
                return 0;
        if (i < 0)
                return (int) i;
        if (dir && name)
                (void) note_where(s, (size_t) i, dir, name);
        return added;
}

/* The index of the first span that ends after `page` (holds it, or lies beyond it); f->n if none. */
static uint32_t seen_after(const PageSet *f, uint64_t page) {
        uint32_t lo = 0, hi = f->n;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                PageSpan p = page_set_span(f, mid);

                if (p.first + p.n <= page)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Whether no page of [first, end) is in the set. */
static bool seen_clear(const PageSet *f, uint64_t first, uint64_t end) {
        uint32_t i;

        if (first >= end)
                return true;
        i = seen_after(f, first);
        return i >= f->n || page_set_span(f, i).first >= end;
}

/* Moves the set to allocated spans, room for two. */
static int seen_unfold(PageSet *f) {
        PageSpan *p = reallocarray(NULL, 2, sizeof *p);

        if (!p)
                return -ENOMEM;
        if (f->n == 1)
                p[0] = page_set_span(f, 0);
        f->spans = p;
        f->allocated = 2;
        return 0;
}

/* Adds [first, first + n) to the file's set of pages seen, merging with the spans it overlaps or touches. */
static int seen_insert(PageSet *f, uint64_t first, uint64_t n) {
        uint64_t end = first + n;
        uint32_t lo, hi;
        int r;

        if (f->allocated == 0) {
                /* empty or one span in place: it stays in place if the result is one span that fits */
                uint64_t mfirst = first, mend = end;
                bool one = f->n == 0;

                if (f->n == 1 && f->one.first <= end && first <= (uint64_t) f->one.first + f->one.n) {
                        mfirst = MIN(first, (uint64_t) f->one.first);
                        mend = MAX(end, (uint64_t) f->one.first + f->one.n);
                        one = true;
                }
                if (one && mfirst <= UINT32_MAX && mend - mfirst <= UINT32_MAX) {
                        f->one.first = (uint32_t) mfirst;
                        f->one.n = (uint32_t) (mend - mfirst);
                        f->n = 1;
                        return 0;
                }
                r = seen_unfold(f);
                if (r < 0)
                        return r;
        }

        /* the first span that ends at or after `first` (it may touch or overlap), and those up to `end` */
        lo = first > 0 ? seen_after(f, first - 1) : 0;
        for (hi = lo; hi < f->n && f->spans[hi].first <= end; hi++) {
                first = MIN(first, f->spans[hi].first);
                end = MAX(end, f->spans[hi].first + f->spans[hi].n);
        }
        if (hi == lo) {         /* nothing to merge with: a new span at lo */
                if (f->n >= f->allocated) {
                        /* a file has no more spans than ranges (SESSION_MAX_FILE_RANGES) */
                        uint32_t na = MIN((uint32_t) f->allocated * 2, (uint32_t) UINT16_MAX);
                        PageSpan *p;

                        if (na <= f->n)
                                return -E2BIG;
                        p = reallocarray(f->spans, na, sizeof *p);
                        if (!p)
                                return -ENOMEM;
                        f->spans = p;
                        f->allocated = (uint16_t) na;
                }
                memmove(f->spans + lo + 1, f->spans + lo, (f->n - lo) * sizeof *f->spans);
                f->n++;
        } else if (hi - lo > 1) {
                memmove(f->spans + lo + 1, f->spans + hi, (f->n - hi) * sizeof *f->spans);
                f->n -= hi - lo - 1;
        }
        f->spans[lo] = (PageSpan) { first, end - first };
        return 0;
}

/* The new pages [a, b) of files[file] (none of them seen: f is its set) join the session's last range, or
 * become a new one (several beyond 2^32 pages) if the caps allow. Returns the number of pages kept (b - a,
 * or 0 when left out), or a negative errno. */
static int64_t add_piece(Session *s, uint32_t file, PageSet *f, uint64_t a, uint64_t b, uint64_t offset_usec) {
        SessionRange *last = s->n_touches > 0 ? &s->touches[s->n_touches - 1] : NULL;
        uint64_t k = (b - a + UINT32_MAX - 1) / UINT32_MAX;     /* new ranges it takes */
        int r;

        if (last && last->file == file) {
                uint64_t lfirst = last->first_page, lend = lfirst + last->n_pages;

                /* after its end, or before its start, the pages between in no range yet */
                if (a >= lend && a - lend < SESSION_RANGE_JOIN_PAGES && b - lfirst <= UINT32_MAX &&
                    seen_clear(f, lend, a)) {
                        r = seen_insert(f, lend, b - lend);
                        if (r < 0)
                                return r;
                        last->n_pages = (uint32_t) (b - lfirst);
                        return (int64_t) (b - a);
                }
                if (b <= lfirst && lfirst - b < SESSION_RANGE_JOIN_PAGES && lend - a <= UINT32_MAX &&
                    seen_clear(f, b, lfirst)) {
                        r = seen_insert(f, a, lfirst - a);
                        if (r < 0)
                                return r;
                        last->first_page = a;
                        last->n_pages = (uint32_t) (lend - a);
                        return (int64_t) (b - a);
                }
        }

        if (f->ranges + k > SESSION_MAX_FILE_RANGES || (s->max_ranges > 0 && s->n_touches + k > s->max_ranges)) {
                s->ranges_full = s->incomplete = true;
                s->skipped_pages += b - a;
                return 0;
        }
        if (s->n_touches + k > s->allocated_touches) {
                size_t na = MAX(s->allocated_touches ? s->allocated_touches * 2 : 64, s->n_touches + k);
                SessionRange *t;

                if (s->max_ranges > 0)
                        na = MAX(MIN(na, s->max_ranges), s->n_touches + k);
                t = reallocarray(s->touches, na, sizeof *t);
                if (!t)
                        return -ENOMEM;
                s->touches = t;
                s->allocated_touches = na;
        }
        r = seen_insert(f, a, b - a);
        if (r < 0)
                return r;
        for (uint64_t p = a; p < b; p += UINT32_MAX)
                s->touches[s->n_touches++] = (SessionRange) {
                        .file = file,
                        .first_page = p,
                        .n_pages = (uint32_t) MIN(b - p, (uint64_t) UINT32_MAX),
                        .offset_usec = offset_usec,
                };
        f->ranges += (uint32_t) k;
        return (int64_t) (b - a);
}

int session_add_metadata(Session *s, uint64_t fsid, uint64_t first, uint64_t n, uint64_t now_usec) {
        uint64_t offset = now_usec > s->start_usec ? now_usec - s->start_usec : 0;
        SessionMetaRange *last = s->n_meta > 0 ? &s->meta[s->n_meta - 1] : NULL;

        assert(!s->sealed);
        if (n == 0 || first > UINT64_MAX - n)
                return -EINVAL;
        /* within the last range, or continuing it (also partly overlapping its end): that range */
        if (last && last->fsid == fsid && first >= last->first_page &&
            first <= last->first_page + last->n_pages) {
                last->n_pages = MAX(last->n_pages, first + n - last->first_page);
                return 1;
        }
        if (s->n_meta >= SESSION_MAX_META_RANGES) {
                s->skipped_metadata++;
                return 0;
        }
        if (s->n_meta >= s->allocated_meta) {
                size_t na = MIN(s->allocated_meta ? s->allocated_meta + s->allocated_meta / 2 : 64,
                                (size_t) SESSION_MAX_META_RANGES);
                SessionMetaRange *t = reallocarray(s->meta, na, sizeof *t);

                if (!t)
                        return -ENOMEM;
                s->meta = t;
                s->allocated_meta = na;
        }
        s->meta[s->n_meta++] = (SessionMetaRange) {
                .fsid = fsid,
                .first_page = first,
                .n_pages = n,
                .offset_usec = offset,
        };
        return 1;
}

int session_add_pages(Session *s, uint32_t file, uint64_t first, uint64_t n, uint64_t now_usec) {
        uint64_t offset = now_usec > s->start_usec ? now_usec - s->start_usec : 0, added = 0;
        uint64_t pos = first, end;
        PageSet *f;

        assert(file < s->n_files && !s->sealed);
        if (n == 0)
                return 0;
        if (first > UINT64_MAX - n)
                return -EINVAL;
        end = first + n;
        if (file >= s->n_seen_files) {
                if (GREEDY_REALLOC(s->seen, s->allocated_seen, (size_t) file + 1) < 0)
                        return -ENOMEM;
                /* only what is used is cleared (and so made resident) */
                memset(s->seen + s->n_seen_files, 0, (file + 1 - s->n_seen_files) * sizeof *s->seen);
                s->n_seen_files = (size_t) file + 1;
        }
        f = &s->seen[file];
        /* the gaps between the spans seen that overlap [first, end) are the new pieces: each found by
         * bisection, as adding one changes the set */
        while (pos < end) {
                uint32_t i = seen_after(f, pos);
                uint64_t stop = end;
                int64_t k;

                if (i < f->n) {
                        const PageSpan p = page_set_span(f, i);

                        if (p.first <= pos) {
                                pos = p.first + p.n;
                                continue;
                        }
                        stop = MIN(end, p.first);
                }
                k = add_piece(s, file, f, pos, stop, offset);
                if (k < 0)
                        return (int) k;
                added += (uint64_t) k;
                pos = stop;
        }
        return (int) MIN(added, (uint64_t) INT_MAX);
}

#define INODE_NO_FILE (UINT32_MAX - 1)

static size_t inode_bucket(uint32_t ino, size_t n_buckets) {
        return table_bucket(ino, n_buckets);
}

static SessionInodes *inodes_of(const Session *s, uint64_t dev) {
        for (size_t i = 0; i < s->n_inode_devs; i++)
                if (s->inodes[i].dev == dev)
                        return &s->inodes[i];
        return NULL;
}

int session_inode_get(const Session *s, uint64_t dev, uint64_t ino, uint32_t *ret) {
        const SessionInodes *d = inodes_of(s, dev);

        if (!d || d->n_buckets == 0 || ino > UINT32_MAX)
                return -ENOENT;
        for (size_t b = inode_bucket((uint32_t) ino, d->n_buckets); d->t[b].file != 0; b = table_next(b, d->n_buckets))
                if (d->t[b].ino == ino) {
                        *ret = d->t[b].file ^ INODE_NO_FILE;
                        return 0;
                }
        return -ENOENT;
}

static void inode_place(SessionInode *t, size_t n_buckets, SessionInode v) {
        size_t b = inode_bucket(v.ino, n_buckets);

        while (t[b].file != 0 && t[b].ino != v.ino)
                b = table_next(b, n_buckets);
        t[b] = v;
}

int session_inode_put(Session *s, uint64_t dev, uint64_t ino, uint32_t file) {
        SessionInodes *d;
        uint32_t old;

        assert(!s->sealed);
        if (dev == 0 || file == INODE_NO_FILE)
                return -EINVAL;
        if (dev > UINT32_MAX || ino > UINT32_MAX)
                return -EOVERFLOW;
        d = inodes_of(s, dev);
        if (!d) {
                if (GREEDY_REALLOC(s->inodes, s->allocated_inode_devs, s->n_inode_devs + 1) < 0)
                        return -ENOMEM;
                d = &s->inodes[s->n_inode_devs++];
                *d = (SessionInodes) { .dev = (uint32_t) dev };
        }
        if (session_inode_get(s, dev, ino, &old) < 0 && table_full(d->n, d->n_buckets)) {
                size_t nb = table_grow(d->n_buckets);
                SessionInode *t = calloc(nb, sizeof *t);

                if (!t)
                        return -ENOMEM;
                for (size_t i = 0; i < d->n_buckets; i++)
                        if (d->t[i].file != 0)
                                inode_place(t, nb, d->t[i]);
                free(d->t);
                d->t = t;
                d->n_buckets = nb;
        }
        if (session_inode_get(s, dev, ino, &old) < 0) {
                d->n++;
                s->n_inodes++;
        }
        inode_place(d->t, d->n_buckets, (SessionInode) { .ino = (uint32_t) ino, .file = file ^ INODE_NO_FILE });
        return 0;
}

void session_seal(Session *s) {
        for (size_t i = 0; i < s->n_seen_files; i++)
                if (s->seen[i].allocated > 0)
                        free(s->seen[i].spans);
        s->seen = mfree(s->seen);
        s->n_seen_files = s->allocated_seen = 0;
        for (size_t i = 0; i < s->n_inode_devs; i++)
                free(s->inodes[i].t);
        s->inodes = mfree(s->inodes);
        s->n_inode_devs = s->allocated_inode_devs = s->n_inodes = 0;
        s->index = mfree(s->index);
        s->n_buckets = 0;
        s->paths.dir_index = mfree(s->paths.dir_index);
        s->paths.n_dir_buckets = 0;
        s->sealed = true;
}

size_t session_memory(const Session *s) {
        size_t m = sizeof *s + s->allocated * sizeof(SessionFile) + s->n_buckets * sizeof(uint32_t) +
                s->allocated_touches * sizeof(SessionRange) + s->allocated_meta * sizeof(SessionMetaRange) +
                s->allocated_inode_devs * sizeof(SessionInodes);

        for (size_t i = 0; i < s->n_inode_devs; i++)
                m += s->inodes[i].n_buckets * sizeof(SessionInode);
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].where)
                        m += sizeof(SessionWhere) + strlen(s->files[i].where->name) + 1;
        m += s->allocated_seen * sizeof(PageSet);
        for (size_t i = 0; i < s->n_seen_files; i++)
                m += s->seen[i].allocated * sizeof(PageSpan);
        m += s->paths.allocated_dirs_bytes + s->paths.n_dir_buckets * sizeof(uint32_t) +
                s->paths.allocated_names_bytes;
        return m;
}
