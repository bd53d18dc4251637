/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
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
        for (size_t i = 0; i < s->n_files; i++)
                free(s->files[i].path);
        free(s->files);
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

size_t session_memory(const Session *s) {
        size_t m = sizeof *s + s->allocated * sizeof(SessionFile) + s->n_buckets * sizeof(uint32_t);

        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i].path)
                        m += strlen(s->files[i].path) + 1;
        return m;
}
