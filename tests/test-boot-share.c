/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The boot session's share for users (boot-share.c): what users' reads may take of the files, pages and
 * metadata ranges, a system process's read making a file the system's, and the session as it is stored:
 * users' files over their share of hot bytes left out, the system's files and ranges first. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/boot-share.h"
#include "test-util.h"

static FileKey key(uint32_t ino) {
        FileKey k = { .fsid = 0x1234, .handle_type = 1, .handle_len = 8 };
        memcpy(k.handle, &ino, sizeof ino);
        return k;
}

static uint64_t page(void) {
        return (uint64_t) sysconf(_SC_PAGESIZE);
}

/* 25% of 8 files: 2 for users. Users' third new file is left out; the system's files still fit up to 8;
 * a file users read again, or one in the session already, is no new file. */
TEST(files) {
        _cleanup_(session_freep) Session *s = NULL;
        BootShare b;
        FileKey k[12];

        for (unsigned i = 0; i < 12; i++)
                k[i] = key(100 + i);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        s->max_files = 8;
        boot_share_init(&b, 25, 8, 1 << 20);
        ASSERT_TRUE(b.on);
        ASSERT_EQ(b.max_files, 2);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[0], 1, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[1], 2, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[2], 3, NULL, NULL), 0);       /* users' share full */
        ASSERT_EQ(b.left_reads, 1);
        ASSERT_TRUE(!session_contains(s, &k[2]));
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[1], 4, NULL, NULL), 0);       /* there already */
        ASSERT_EQ(b.left_reads, 1);
        ASSERT_TRUE(boot_share_user_file(&b, 0) && boot_share_user_file(&b, 1));
        for (unsigned i = 2; i < 8; i++)
                ASSERT_EQ(boot_share_add_file(&b, s, false, &k[i], 10 + i, NULL, NULL), 1);
        ASSERT_EQ(s->n_files, 8);
        ASSERT_TRUE(!s->full);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &k[8], 20, NULL, NULL), 0);     /* MaxSessionFiles= */
        ASSERT_TRUE(s->full);
        /* a system process reads a user's file: the system's, and users have room for one more */
        ASSERT_EQ(boot_share_add_file(&b, s, false, &k[0], 21, NULL, NULL), 0);
        ASSERT_TRUE(!boot_share_user_file(&b, 0) && boot_share_user_file(&b, 1));
        ASSERT_EQ(b.n_user_files, 1);
        ASSERT_TRUE(boot_share_left_out(&b));
        boot_share_done(&b);

        /* 100%: no share at all, users' reads are everyone's */
        boot_share_init(&b, 100, 8, 1 << 20);
        ASSERT_TRUE(!b.on);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[9], 22, NULL, NULL), 0);     /* full, as before */
        ASSERT_TRUE(!boot_share_user_file(&b, 8));
        boot_share_done(&b);
        /* 0%: users' reads take nothing */
        boot_share_init(&b, 0, 8, 1 << 20);
        ASSERT_TRUE(b.on);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &k[10], 23, NULL, NULL), 0);
        ASSERT_EQ(b.left_reads, 1);
        boot_share_done(&b);
}

/* 25% of a 64-page hot set: users' page events add 16 pages at most; the system's any. */
TEST(pages_and_metadata) {
        _cleanup_(session_freep) Session *s = NULL;
        BootShare b;
        FileKey a = key(1), c = key(2);

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        s->pages = true;
        boot_share_init(&b, 25, 100, 64 * page());
        ASSERT_EQ(b.max_pages, 16);
        ASSERT_EQ(b.max_meta, SESSION_MAX_META_RANGES / 4);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &a, 1, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &c, 2, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 0, 0, 10, 3), 10);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 0, 30, 10, 4), 10);     /* over it by this one (a range of its own: more than 16 pages after the first) */
        ASSERT_EQ(b.user_pages, 20);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 0, 40, 10, 5), 0);      /* at the share */
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 1, 40, 10, 5), 0);      /* of any file */
        ASSERT_EQ(b.left_pages, 20);
        ASSERT_EQ(boot_share_add_pages(&b, s, false, 1, 0, 100, 6), 100);
        ASSERT_EQ(s->n_touches, 3);
        ASSERT_TRUE(boot_share_user_file(&b, 0));
        /* the system's pages of a user's file: the system's file */
        ASSERT_EQ(boot_share_add_pages(&b, s, false, 0, 60, 1, 7), 1);
        ASSERT_TRUE(!boot_share_user_file(&b, 0));

        /* metadata: users' ranges up to the share; extending the last range makes none */
        b.max_meta = 2;
        ASSERT_EQ(boot_share_add_metadata(&b, s, true, 9, 100, 1, 8), 1);
        ASSERT_EQ(boot_share_add_metadata(&b, s, true, 9, 101, 1, 8), 1);
        ASSERT_EQ(b.user_meta, 1);
        ASSERT_EQ(boot_share_add_metadata(&b, s, true, 9, 200, 1, 8), 1);
        ASSERT_EQ(boot_share_add_metadata(&b, s, true, 9, 300, 1, 8), 0);
        ASSERT_EQ(b.left_meta, 1);
        ASSERT_EQ(boot_share_add_metadata(&b, s, false, 9, 400, 1, 8), 1);
        ASSERT_EQ(s->n_meta, 3);
        boot_share_done(&b);
}

/* The hot bytes the test's callback gives: the pages seen, or 100 pages for a file without any. */
static uint64_t hot_bytes(const Session *s, size_t file, uint64_t seen_pages, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
        return (seen_pages ? seen_pages : 100) * page();
}

static uint32_t ino_of(const Session *s, size_t file) {
        uint32_t ino;

        memcpy(&ino, s->files[file].key.handle, sizeof ino);
        return ino;
}

/* Read order: u1 (user, 30 pages), s1 (system), u2 (user, whole: 100 pages), s2 (system, 5 pages), u3 (user,
 * 10 pages); a 160-page share of hot bytes (25% of 640): u1 and u2 fit (130), u3 does too (140); with a
 * 120-page share u2 does not, u3 does. Stored order: s1, s2, then the users' files kept; the ranges likewise,
 * each file's own in their order. */
static void finish_case(uint64_t share_pages, bool u2_kept) {
        _cleanup_(session_freep) Session *s = NULL;
        FileKey u1 = key(1), s1 = key(2), u2 = key(3), s2 = key(4), u3 = key(5);
        unsigned calls = 0;
        BootShare b;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        s->pages = true;
        boot_share_init(&b, 25, 100, 4 * share_pages * page());
        ASSERT_EQ(b.max_pages, share_pages);
        b.max_pages = 1000;     /* page events are not what this case is about */
        ASSERT_EQ(boot_share_add_file(&b, s, true, &u1, 1, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 0, 0, 20, 1), 20);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &s1, 2, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, true, &u2, 3, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &s2, 4, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_pages(&b, s, false, 3, 0, 5, 4), 5);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 0, 50, 10, 5), 10);     /* u1 again, a range of its own */
        ASSERT_EQ(boot_share_add_file(&b, s, true, &u3, 6, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_pages(&b, s, true, 4, 0, 10, 6), 10);
        ASSERT_EQ(s->n_touches, 4);
        b.max_pages = share_pages;
        session_seal(s);
        ASSERT_OK(boot_share_finish(&b, s, hot_bytes, &calls));
        ASSERT_EQ(calls, 3);    /* users' files only */

        uint32_t want[] = { 2, 4, 1, 3, 5 }, want_dropped[] = { 2, 4, 1, 5 };
        const uint32_t *w = u2_kept ? want : want_dropped;
        size_t n = u2_kept ? 5 : 4;

        ASSERT_EQ(s->n_files, n);
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(ino_of(s, i), w[i]);
        ASSERT_EQ(b.left_hot_files, u2_kept ? 0 : 1);
        ASSERT_EQ(b.n_user_files, n - 2);
        ASSERT_TRUE(!boot_share_user_file(&b, 0) && !boot_share_user_file(&b, 1) && boot_share_user_file(&b, 2));
        /* ranges: s2's, then u1's two, then u3's, files by their new places */
        ASSERT_EQ(s->n_touches, 4);
        ASSERT_EQ(s->touches[0].file, 1);
        ASSERT_EQ(s->touches[0].n_pages, 5);
        ASSERT_EQ(s->touches[1].file, 2);
        ASSERT_EQ(s->touches[1].first_page, 0);
        ASSERT_EQ(s->touches[2].file, 2);
        ASSERT_EQ(s->touches[2].first_page, 50);
        ASSERT_EQ(s->touches[3].file, n - 1);
        ASSERT_EQ(s->touches[3].n_pages, 10);
        ASSERT_EQ(s->touches[3].offset_usec, 6);        /* kept as recorded */
        boot_share_done(&b);
}

TEST(finish) {
        finish_case(160, true);
        finish_case(120, false);
}

/* No user read anything: nothing moves, the callback is not called. */
TEST(finish_without_users) {
        _cleanup_(session_freep) Session *s = NULL;
        FileKey a = key(1), c = key(2);
        unsigned calls = 0;
        BootShare b;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        boot_share_init(&b, 25, 100, 1 << 20);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &c, 1, NULL, NULL), 1);
        ASSERT_EQ(boot_share_add_file(&b, s, false, &a, 2, NULL, NULL), 1);
        session_seal(s);
        ASSERT_OK(boot_share_finish(&b, s, hot_bytes, &calls));
        ASSERT_EQ(calls, 0);
        ASSERT_EQ(ino_of(s, 0), 2);
        ASSERT_EQ(ino_of(s, 1), 1);
        ASSERT_TRUE(!boot_share_left_out(&b));
        boot_share_done(&b);
}

int main(void) {
        RUN(files);
        RUN(pages_and_metadata);
        RUN(finish);
        RUN(finish_without_users);
        return EXIT_SUCCESS;
}
