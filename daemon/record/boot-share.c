/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc-util.h"
#include "record/boot-share.h"
#include "common/macro.h"

void boot_share_init(BootShare *b, double percent, size_t max_session_files, uint64_t max_hot_set_bytes) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

        percent = MAX(0.0, MIN(percent, 100.0));
        *b = (BootShare) {
                .on = percent < 100.0,
                .max_files = (size_t) ((double) max_session_files * percent / 100.0),
                .max_pages = (uint64_t) ((double) (max_hot_set_bytes / page) * percent / 100.0),
                .max_meta = (size_t) ((double) SESSION_MAX_META_RANGES * percent / 100.0),
        };
}

void boot_share_done(BootShare *b) {
        free(b->user);
        *b = (BootShare) {};
}

bool boot_share_user_file(const BootShare *b, size_t file) {
        return file / 64 < b->n_words && (b->user[file / 64] >> (file % 64) & 1);
}

bool boot_share_left_out(const BootShare *b) {
        return b->left_reads + b->left_pages + b->left_meta + b->left_hot_files > 0;
}

static int mark_user(BootShare *b, size_t file) {
        size_t old = b->n_words;

        if (GREEDY_REALLOC(b->user, b->n_words, file / 64 + 1) < 0)
                return -ENOMEM;
        memset(b->user + old, 0, (b->n_words - old) * sizeof *b->user);
        b->user[file / 64] |= UINT64_C(1) << (file % 64);
        b->n_user_files++;
        return 0;
}

/* A system process read it: the system's from now on. */
static void unmark_user(BootShare *b, size_t file) {
        if (!boot_share_user_file(b, file))
                return;
        b->user[file / 64] &= ~(UINT64_C(1) << (file % 64));
        b->n_user_files--;
}

int boot_share_add_file(BootShare *b, Session *s, bool user, const FileKey *key, uint64_t now_usec,
                        const FileKey *dir, const char *name) {
        ssize_t i;
        int r;

        if (!b->on)
                return session_add_where(s, key, now_usec, dir, name);
        if (user && b->n_user_files >= b->max_files && !session_contains(s, key)) {
                b->left_reads++;
                return 0;
        }
        r = session_add_where(s, key, now_usec, dir, name);
        if (r > 0 && user)
                /* out of memory: the file counts as the system's, which only costs users' share its place */
                (void) mark_user(b, s->n_files - 1);
        else if (r == 0 && !user && b->n_user_files > 0 && (i = session_index(s, key)) >= 0)
                unmark_user(b, (size_t) i);
        return r;
}

int boot_share_add_pages(BootShare *b, Session *s, bool user, uint32_t file, uint64_t first, uint64_t n,
                         uint64_t now_usec) {
        int r;

        if (!b->on)
                return session_add_pages(s, file, first, n, now_usec);
        if (!user) {
                unmark_user(b, file);
                return session_add_pages(s, file, first, n, now_usec);
        }
        if (b->user_pages >= b->max_pages) {
                b->left_pages += n;
                return 0;
        }
        r = session_add_pages(s, file, first, n, now_usec);
        if (r > 0)
                b->user_pages += (uint64_t) r;
        return r;
}

int boot_share_add_metadata(BootShare *b, Session *s, bool user, uint64_t fsid, uint64_t first, uint64_t n,
                            uint64_t now_usec) {
        size_t before = s->n_meta;
        int r;

        if (!b->on || !user)
                return session_add_metadata(s, fsid, first, n, now_usec);
        if (b->user_meta >= b->max_meta) {
                b->left_meta++;
                return 0;
        }
        r = session_add_metadata(s, fsid, first, n, now_usec);
        b->user_meta += s->n_meta - before;
        return r;
}

int boot_share_finish(BootShare *b, Session *s, BootShareHotBytesFn hot_bytes, void *userdata) {
        _cleanup_free_ uint64_t *seen = NULL;   /* per file: pages seen read; UINT64_MAX: left out */
        _cleanup_free_ size_t *to = NULL;       /* per file: its new index, SIZE_MAX: left out */
        _cleanup_free_ SessionFile *files = NULL;
        _cleanup_free_ SessionRange *touches = NULL;
        uint64_t budget = b->max_pages * (uint64_t) sysconf(_SC_PAGESIZE), used = 0;
        size_t n_files = 0, n_system = 0, n_touches = 0;

        assert(s->sealed);
        if (!b->on || b->n_user_files == 0 || s->n_files == 0)
                return 0;
        seen = calloc(s->n_files, sizeof *seen);
        to = calloc(s->n_files, sizeof *to);
        files = calloc(s->n_files, sizeof *files);
        touches = calloc(s->n_touches + 1, sizeof *touches);
        if (!seen || !to || !files || !touches)
                return -ENOMEM;

        /* users' files' hot bytes in read order: those that do not fit any more are left out */
        for (size_t i = 0; i < s->n_touches; i++)
                if (s->touches[i].file < s->n_files)
                        seen[s->touches[i].file] += s->touches[i].n_pages;
        for (size_t i = 0; i < s->n_files; i++) {
                uint64_t h;

                if (!boot_share_user_file(b, i))
                        continue;
                h = hot_bytes(s, i, seen[i], userdata);
                if (h > budget - used) {
                        seen[i] = UINT64_MAX;
                        b->left_hot_files++;
                } else
                        used += h;
        }

        /* the system's files first, then users', each in read order; the ranges the same way */
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 1)
                        n_system = n_files;
                for (size_t i = 0; i < s->n_files; i++) {
                        if (boot_share_user_file(b, i) != (pass == 1))
                                continue;
                        if (seen[i] == UINT64_MAX) {
                                to[i] = SIZE_MAX;
                                free(s->files[i].where);
                                continue;
                        }
                        to[i] = n_files;
                        files[n_files++] = s->files[i];
                }
        }
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < s->n_touches; i++) {
                        SessionRange t = s->touches[i];

                        if (t.file >= s->n_files || boot_share_user_file(b, t.file) != (pass == 1) ||
                            to[t.file] == SIZE_MAX)
                                continue;
                        t.file = (uint32_t) to[t.file];
                        touches[n_touches++] = t;
                }

        free(s->files);
        s->files = TAKE_PTR(files);
        s->allocated = s->n_files;
        s->n_files = s->n_resolved = n_files;
        free(s->touches);
        s->touches = TAKE_PTR(touches);
        s->allocated_touches = s->n_touches + 1;
        s->n_touches = n_touches;
        /* users' files are the last ones now */
        memset(b->user, 0, b->n_words * sizeof *b->user);
        b->n_user_files = 0;
        for (size_t i = n_system; i < n_files; i++)
                (void) mark_user(b, i);        /* fits: fewer bits than before */
        return 0;
}
