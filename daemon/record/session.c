/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session.h"

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
        for (size_t i = 0; i < s->n_files; i++) {
                free(s->files[i].path);
                free(s->files[i].where);
        }
        for (size_t i = 0; i < s->n_seen_files; i++)
                free(s->seen[i].spans);
        free(s->seen);
        free(s->files);
        free(s->touches);
        free(s->inodes);
        free(s->index);
        free(s);
        return NULL;
}

static size_t bucket_of(const Session *s, const FileKey *key) {
        return (size_t) file_key_hash(key) & (s->n_buckets - 1);
}

static ssize_t find(const Session *s, const FileKey *key, size_t *ret_bucket) {
        size_t b;

        if (s->n_buckets == 0)
                return -1;
        for (b = bucket_of(s, key); s->index[b] != 0; b = (b + 1) & (s->n_buckets - 1))
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
                        b = (b + 1) & (n_buckets - 1);
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

int session_add(Session *s, const FileKey *key, uint64_t now_usec) {
        size_t b;
        int r;

        if (find(s, key, &b) >= 0)
                return 0;
        if (s->max_files > 0 && s->n_files >= s->max_files) {
                s->full = s->incomplete = true;
                return 0;
        }

        /* keep the load factor under 1/2 */
        if ((s->n_files + 1) * 2 > s->n_buckets) {
                r = rehash(s, s->n_buckets ? s->n_buckets * 2 : 64);
                if (r < 0)
                        return r;
                (void) find(s, key, &b);
        }
        if (s->n_files >= s->allocated) {
                size_t na = s->allocated ? s->allocated * 2 : 32;
                SessionFile *n = realloc(s->files, na * sizeof *n);
                if (!n)
                        return -ENOMEM;
                s->files = n;
                s->allocated = na;
        }
        s->files[s->n_files] = (SessionFile) {
                .key = *key,
                .offset_usec = now_usec > s->start_usec ? now_usec - s->start_usec : 0,
        };
        s->n_files++;
        s->index[b] = (uint32_t) s->n_files;
        return 1;
}

int session_note_where(Session *s, const FileKey *key, const FileKey *dir, const char *name) {
        ssize_t i = find(s, key, NULL);
        SessionFile *f;
        size_t n;

        if (i < 0)
                return 0;
        f = &s->files[i];
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

/* Adds [first, first + n) to the file's set of pages seen, merging with the spans it overlaps or touches. */
static int seen_insert(PageSet *f, uint64_t first, uint64_t n) {
        uint64_t end = first + n;
        uint32_t lo = 0, hi;

        /* the first span that ends at or after `first` (it may touch or overlap) */
        while (lo < f->n && f->spans[lo].first + f->spans[lo].n < first)
                lo++;
        for (hi = lo; hi < f->n && f->spans[hi].first <= end; hi++) {
                first = MIN(first, f->spans[hi].first);
                end = MAX(end, f->spans[hi].first + f->spans[hi].n);
        }
        if (hi == lo) {         /* nothing to merge with: a new span at lo */
                if (f->n >= f->allocated) {
                        uint32_t na = f->allocated ? f->allocated * 2 : 4;
                        PageSpan *p = reallocarray(f->spans, na, sizeof *p);
                        if (!p)
                                return -ENOMEM;
                        f->spans = p;
                        f->allocated = na;
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

static int touch_piece(Session *s, uint32_t file, uint64_t first, uint64_t n, uint64_t offset_usec) {
        SessionRange *last = s->n_touches > 0 ? &s->touches[s->n_touches - 1] : NULL;

        if (last && last->file == file && last->first_page + last->n_pages == first) {
                last->n_pages += n;
                return 0;
        }
        if (s->n_touches >= s->allocated_touches) {
                size_t na = s->allocated_touches ? s->allocated_touches * 2 : 64;
                SessionRange *t = reallocarray(s->touches, na, sizeof *t);
                if (!t)
                        return -ENOMEM;
                s->touches = t;
                s->allocated_touches = na;
        }
        s->touches[s->n_touches++] = (SessionRange) {
                .file = file,
                .first_page = first,
                .n_pages = n,
                .offset_usec = offset_usec,
        };
        return 0;
}

int session_add_pages(Session *s, uint32_t file, uint64_t first, uint64_t n, uint64_t now_usec) {
        uint64_t offset = now_usec > s->start_usec ? now_usec - s->start_usec : 0, added = 0;
        uint64_t pos = first, end = first + n;
        PageSet *f;
        int r;

        assert(file < s->n_files);
        if (n == 0)
                return 0;
        if (file >= s->n_seen_files) {
                size_t nn = MAX((size_t) file + 1, s->n_seen_files * 2);
                PageSet *t = reallocarray(s->seen, nn, sizeof *t);

                if (!t)
                        return -ENOMEM;
                memset(t + s->n_seen_files, 0, (nn - s->n_seen_files) * sizeof *t);
                s->seen = t;
                s->n_seen_files = nn;
        }
        f = &s->seen[file];
        /* walk the spans seen that overlap [first, end): the gaps between them are the new pieces */
        for (uint32_t i = 0; i < f->n && pos < end; i++) {
                const PageSpan *p = &f->spans[i];

                if (p->first + p->n <= pos)
                        continue;
                if (p->first >= end)
                        break;
                if (p->first > pos) {
                        r = touch_piece(s, file, pos, p->first - pos, offset);
                        if (r < 0)
                                return r;
                        added += p->first - pos;
                }
                pos = p->first + p->n;
        }
        if (pos < end) {
                r = touch_piece(s, file, pos, end - pos, offset);
                if (r < 0)
                        return r;
                added += end - pos;
        }
        if (added == 0)
                return 0;
        r = seen_insert(f, first, n);
        if (r < 0)
                return r;
        return (int) MIN(added, (uint64_t) INT_MAX);
}

static size_t inode_bucket(uint64_t dev, uint64_t ino, size_t n_buckets) {
        return (size_t) ((ino * 0x9E3779B97F4A7C15ULL) ^ dev) & (n_buckets - 1);
}

int session_inode_get(const Session *s, uint64_t dev, uint64_t ino, uint32_t *ret) {
        if (s->n_inode_buckets == 0)
                return -ENOENT;
        for (size_t b = inode_bucket(dev, ino, s->n_inode_buckets); s->inodes[b].dev != 0;
             b = (b + 1) & (s->n_inode_buckets - 1))
                if (s->inodes[b].dev == dev && s->inodes[b].ino == ino) {
                        *ret = s->inodes[b].file;
                        return 0;
                }
        return -ENOENT;
}

static void inode_place(SessionInode *t, size_t n_buckets, SessionInode v) {
        size_t b = inode_bucket(v.dev, v.ino, n_buckets);

        while (t[b].dev != 0 && !(t[b].dev == v.dev && t[b].ino == v.ino))
                b = (b + 1) & (n_buckets - 1);
        t[b] = v;
}

int session_inode_put(Session *s, uint64_t dev, uint64_t ino, uint32_t file) {
        uint32_t old;

        if (dev == 0)
                return -EINVAL;
        if (session_inode_get(s, dev, ino, &old) < 0 && (s->n_inodes + 1) * 2 > s->n_inode_buckets) {
                size_t nb = s->n_inode_buckets ? s->n_inode_buckets * 2 : 64;
                SessionInode *t = calloc(nb, sizeof *t);

                if (!t)
                        return -ENOMEM;
                for (size_t i = 0; i < s->n_inode_buckets; i++)
                        if (s->inodes[i].dev != 0)
                                inode_place(t, nb, s->inodes[i]);
                free(s->inodes);
                s->inodes = t;
                s->n_inode_buckets = nb;
        }
        if (session_inode_get(s, dev, ino, &old) < 0)
                s->n_inodes++;
        inode_place(s->inodes, s->n_inode_buckets, (SessionInode) { .dev = dev, .ino = ino, .file = file });
        return 0;
}

size_t session_memory(const Session *s) {
        size_t m = sizeof *s + s->allocated * sizeof(SessionFile) + s->n_buckets * sizeof(uint32_t) +
                s->allocated_touches * sizeof(SessionRange) + s->n_inode_buckets * sizeof(SessionInode);

        for (size_t i = 0; i < s->n_files; i++) {
                if (s->files[i].path)
                        m += strlen(s->files[i].path) + 1;
                if (s->files[i].where)
                        m += sizeof(SessionWhere) + strlen(s->files[i].where->name) + 1;
        }
        m += s->n_seen_files * sizeof(PageSet);
        for (size_t i = 0; i < s->n_seen_files; i++)
                m += s->seen[i].allocated * sizeof(PageSpan);
        return m;
}
