/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the recording building blocks: session file sets, pid attribution (against a fixture
 * /proc tree), mountinfo parsing (fixture) and FID record parsing (a buffer laid out as the kernel does). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "record/boot-seed.h"
#include "record/fid-event.h"
#include "fs/fid-util.h"
#include "fs/mounts.h"
#include "record/pidmap.h"
#include "record/recorder.h"
#include "record/session.h"
#include "test-util.h"

static FileKey key(uint32_t ino) {
        FileKey k = { .fsid = 0x1234, .handle_type = 1, .handle_len = 8 };
        memcpy(k.handle, &ino, sizeof ino);
        return k;
}

TEST(session_order_and_dedupe) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11), c = key(12);

        ASSERT_OK(session_new(PROFILE_APP, "/bin/x", 1000, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(s->deadline_usec, 1000 + 10 * USEC_PER_SEC);
        ASSERT_EQ(session_add(s, &b, 1500), 1);
        ASSERT_EQ(session_add(s, &a, 2000), 1);
        ASSERT_EQ(session_add(s, &b, 2500), 0);
        ASSERT_EQ(session_add(s, &c, 3000), 1);
        ASSERT_EQ(s->n_files, 3);
        ASSERT_TRUE(file_key_equal(&s->files[0].key, &b));
        ASSERT_TRUE(file_key_equal(&s->files[1].key, &a));
        ASSERT_TRUE(file_key_equal(&s->files[2].key, &c));
        ASSERT_EQ(s->files[0].offset_usec, 500);   /* first access kept, not the repeat */
        ASSERT_TRUE(session_contains(s, &c));
        FileKey other = key(10);
        other.fsid = 0x9999;                      /* same inode, other filesystem: a different file */
        ASSERT_TRUE(!session_contains(s, &other));
        session_free(s);
}

/* The directory and name an event gave: kept for a file not named yet, once, and never for a bad name. */
TEST(session_where) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11), d = key(2), d2 = key(3);

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        ASSERT_EQ(session_add(s, &a, 1), 1);
        ASSERT_EQ(session_add(s, &b, 2), 1);
        ASSERT_TRUE(!s->files[0].where);
        ASSERT_EQ(session_add_where(s, &a, 3, &d, "liba.so.1"), 0);
        ASSERT_TRUE(s->files[0].where);
        ASSERT_TRUE(file_key_equal(&s->files[0].where->dir, &d));
        ASSERT_STREQ(s->files[0].where->name, "liba.so.1");
        ASSERT_EQ(session_add_where(s, &a, 4, &d2, "other"), 0);  /* the first read's place is kept */
        ASSERT_STREQ(s->files[0].where->name, "liba.so.1");
        ASSERT_EQ(session_add_where(s, &b, 5, &d, ""), 0);        /* bad names: not kept */
        ASSERT_EQ(session_add_where(s, &b, 6, &d, "x/y"), 0);
        ASSERT_TRUE(!s->files[1].where);
        ASSERT_OK(session_set_path(s, 1, "/named/already"));
        ASSERT_EQ(session_add_where(s, &b, 7, &d, "b"), 0);       /* named: nothing more to keep */
        ASSERT_TRUE(!s->files[1].where);
        ASSERT_TRUE(session_memory(s) > sizeof *s + strlen("liba.so.1"));
        session_free(s);

        /* both in one: added with its place, or its place noted when it had none; full: left out */
        FileKey c = key(12);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        s->max_files = 2;
        ASSERT_EQ(session_add_where(s, &a, 1, &d, "a"), 1);
        ASSERT_STREQ(s->files[0].where->name, "a");
        ASSERT_EQ(session_add_where(s, &b, 2, NULL, NULL), 1);
        ASSERT_TRUE(!s->files[1].where);
        ASSERT_EQ(session_add_where(s, &b, 3, &d2, "b"), 0);
        ASSERT_TRUE(file_key_equal(&s->files[1].where->dir, &d2));
        ASSERT_STREQ(s->files[1].where->name, "b");
        ASSERT_EQ(session_add_where(s, &a, 4, &d2, "other"), 0);
        ASSERT_STREQ(s->files[0].where->name, "a");
        ASSERT_EQ(session_add_where(s, &c, 5, &d, "c"), 0);
        ASSERT_EQ(s->n_files, 2);
        ASSERT_TRUE(s->full && s->incomplete);
        session_free(s);
}

TEST(session_many_files) {
        Session *s = NULL;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        for (uint32_t i = 0; i < 100000; i++) {
                FileKey k = key(i);
                ASSERT_EQ(session_add(s, &k, i), 1);
        }
        for (uint32_t i = 0; i < 100000; i += 7) {
                FileKey k = key(i);
                ASSERT_EQ(session_add(s, &k, 0), 0);
                ASSERT_TRUE(file_key_equal(&s->files[i].key, &k));
        }
        ASSERT_EQ(s->n_files, 100000);
        /* well under the 20 MiB budget for 100k files */
        ASSERT_TRUE(session_memory(s) < 10u * 1024 * 1024);
        session_free(s);
}

/* MaxSessionFiles=: files beyond the cap are left out, the session is marked full and incomplete. */
TEST(session_max_files) {
        Session *s = NULL;

        ASSERT_OK(session_new(PROFILE_APP, "/bin/x", 0, USEC_PER_SEC, &s));
        s->max_files = 3;
        for (uint32_t i = 0; i < 3; i++) {
                FileKey k = key(i);
                ASSERT_EQ(session_add(s, &k, i), 1);
        }
        ASSERT_TRUE(!s->full && !s->incomplete);
        FileKey again = key(1), more = key(3);
        ASSERT_EQ(session_add(s, &again, 10), 0);
        ASSERT_TRUE(!s->full && !s->incomplete);   /* a file it has is no new file */
        ASSERT_EQ(session_add(s, &more, 10), 0);
        ASSERT_TRUE(s->full && s->incomplete);
        ASSERT_EQ(s->n_files, 3);
        ASSERT_TRUE(!session_contains(s, &more));
        session_free(s);
}

static void assert_range(const Session *s, size_t i, uint32_t file, uint64_t first, uint64_t n, uint64_t offset) {
        ASSERT_TRUE(i < s->n_touches);
        ASSERT_EQ(s->touches[i].file, file);
        ASSERT_EQ(s->touches[i].first_page, first);
        ASSERT_EQ(s->touches[i].n_pages, n);
        ASSERT_EQ(s->touches[i].offset_usec, offset);
}

TEST(session_pages) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11);
        size_t m0, m1;

        ASSERT_OK(session_new(PROFILE_APP, "/bin/x", 1000, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(session_add(s, &a, 1000), 1);
        ASSERT_EQ(session_add(s, &b, 1000), 1);
        ASSERT_EQ(session_index(s, &b), 1);
        m0 = session_memory(s);

        /* A 0-9, B 0-9, A 10-19: interleaved reads stay three ranges in their order */
        ASSERT_EQ(session_add_pages(s, 0, 0, 10, 1100), 10);
        ASSERT_EQ(session_add_pages(s, 1, 0, 10, 1200), 10);
        ASSERT_EQ(session_add_pages(s, 0, 10, 10, 1300), 10);
        ASSERT_EQ(s->n_touches, 3);
        assert_range(s, 0, 0, 0, 10, 100);
        assert_range(s, 1, 1, 0, 10, 200);
        assert_range(s, 2, 0, 10, 10, 300);

        /* a piece continuing the last range extends it, its time stays the first touch */
        ASSERT_EQ(session_add_pages(s, 0, 20, 4, 1400), 4);
        ASSERT_EQ(s->n_touches, 3);
        assert_range(s, 2, 0, 10, 14, 300);

        /* pages seen before are cut out: a page inserted again after eviction is no new touch */
        ASSERT_EQ(session_add_pages(s, 0, 5, 1, 1500), 0);
        ASSERT_EQ(session_add_pages(s, 1, 0, 10, 1500), 0);
        ASSERT_EQ(s->n_touches, 3);

        /* a folio over known pages and a gap: only the gap's pieces are new (two of them here, apart: the
         * pages between them are in a range already) */
        ASSERT_EQ(session_add_pages(s, 1, 30, 2, 1600), 2);             /* B 30-31 */
        ASSERT_EQ(session_add_pages(s, 0, 200, 2, 1650), 2);            /* A 200-201 */
        ASSERT_EQ(session_add_pages(s, 1, 8, 32, 1700), 28);            /* B 8-39: new 10-29 and 32-39 */
        ASSERT_EQ(s->n_touches, 7);
        assert_range(s, 3, 1, 30, 2, 600);
        assert_range(s, 4, 0, 200, 2, 650);
        assert_range(s, 5, 1, 10, 20, 700);
        assert_range(s, 6, 1, 32, 8, 700);
        /* B's set is one span now, 0-39 */
        ASSERT_EQ(s->seen[1].n, 1);
        ASSERT_EQ(s->seen[1].spans[0].first, 0);
        ASSERT_EQ(s->seen[1].spans[0].n, 40);
        ASSERT_EQ(s->seen[1].ranges, 4);

        /* out of order and merging spans: 100-109, 140-149 (too far to join), then 105-144 bridges them,
         * its new pages 110-139 joining the last range (they end where it starts) */
        ASSERT_EQ(session_add_pages(s, 0, 100, 10, 1800), 10);
        ASSERT_EQ(session_add_pages(s, 0, 140, 10, 1800), 10);
        ASSERT_EQ(s->seen[0].n, 4);
        ASSERT_EQ(session_add_pages(s, 0, 105, 40, 1900), 30);
        ASSERT_EQ(s->seen[0].n, 3);
        ASSERT_EQ(s->seen[0].spans[1].first, 100);
        ASSERT_EQ(s->seen[0].spans[1].n, 50);
        assert_range(s, s->n_touches - 1, 0, 110, 40, 800);
        /* 24-99 ends 10 pages before the last range, but pages 100-109 between are in a range: apart */
        ASSERT_EQ(session_add_pages(s, 0, 0, 200, 2000), 200 - 24 - 50);
        assert_range(s, s->n_touches - 2, 0, 24, 76, 1000);
        assert_range(s, s->n_touches - 1, 0, 150, 50, 1000);

        /* memory: ranges and spans are counted */
        m1 = session_memory(s);
        ASSERT_TRUE(m1 >= m0 + s->allocated_touches * sizeof(SessionRange) +
                    (s->seen[0].allocated + s->seen[1].allocated) * sizeof(PageSpan));

        /* the inode cache */
        uint32_t f;
        ASSERT_EQ(session_inode_get(s, 7, 12, &f), -ENOENT);
        ASSERT_OK(session_inode_put(s, 7, 12, 1));
        ASSERT_OK(session_inode_put(s, 7, 13, SESSION_INODE_LEFT_OUT));
        for (uint64_t i = 0; i < 1000; i++)
                ASSERT_OK(session_inode_put(s, 8, i, (uint32_t) i));
        ASSERT_OK(session_inode_get(s, 7, 12, &f));
        ASSERT_EQ(f, 1);
        ASSERT_OK(session_inode_get(s, 7, 13, &f));
        ASSERT_EQ(f, SESSION_INODE_LEFT_OUT);
        ASSERT_OK(session_inode_get(s, 8, 999, &f));
        ASSERT_EQ(f, 999);
        ASSERT_EQ(s->n_inodes, 1002);
        ASSERT_TRUE(session_memory(s) >= m1 + 1002 * sizeof(SessionInode));
        session_free(s);
}

/* Metadata pages: contiguous ones on one filesystem extend the last range, pages it holds are dropped,
 * anything else is a new range; past SESSION_MAX_META_RANGES they are only counted. */
TEST(session_metadata) {
        Session *s = NULL;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 1000, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(session_add_metadata(s, 7, 100, 1, 1100), 1);
        ASSERT_EQ(session_add_metadata(s, 7, 101, 2, 1200), 1);        /* continues: one range 100-102 */
        ASSERT_EQ(session_add_metadata(s, 7, 101, 1, 1250), 1);        /* held already: nothing new */
        ASSERT_EQ(session_add_metadata(s, 7, 102, 3, 1260), 1);        /* overlaps its end: 100-104 */
        ASSERT_EQ(session_add_metadata(s, 9, 103, 1, 1300), 1);        /* another filesystem */
        ASSERT_EQ(session_add_metadata(s, 7, 103, 1, 1400), 1);        /* not the last range's: new */
        ASSERT_EQ(session_add_metadata(s, 7, 5, 1, 1500), 1);          /* backwards: new */
        ASSERT_ERROR(session_add_metadata(s, 7, 6, 0, 1600), EINVAL);
        ASSERT_EQ(s->n_meta, 4);
        ASSERT_EQ(s->meta[0].fsid, 7);
        ASSERT_EQ(s->meta[0].first_page, 100);
        ASSERT_EQ(s->meta[0].n_pages, 5);
        ASSERT_EQ(s->meta[0].offset_usec, 100);
        ASSERT_EQ(s->meta[1].fsid, 9);
        ASSERT_EQ(s->meta[2].fsid, 7);
        ASSERT_EQ(s->meta[2].first_page, 103);
        ASSERT_EQ(s->meta[3].first_page, 5);
        ASSERT_EQ(s->meta[3].offset_usec, 500);
        /* file ranges are apart: none */
        ASSERT_EQ(s->n_touches, 0);
        ASSERT_TRUE(session_memory(s) >= s->allocated_meta * sizeof(SessionMetaRange));

        /* the cap: every other page, so none continues the last */
        for (uint64_t i = s->n_meta; i < SESSION_MAX_META_RANGES; i++)
                ASSERT_EQ(session_add_metadata(s, 7, 1000 + 2 * i, 1, 2000), 1);
        ASSERT_EQ(s->n_meta, SESSION_MAX_META_RANGES);
        ASSERT_EQ(s->skipped_metadata, 0);
        ASSERT_EQ(session_add_metadata(s, 7, 1, 1, 3000), 0);
        ASSERT_EQ(s->skipped_metadata, 1);
        /* continuing the last range still extends it */
        ASSERT_EQ(session_add_metadata(s, 7, 1000 + 2 * (SESSION_MAX_META_RANGES - 1) + 1, 1, 3000), 1);
        ASSERT_EQ(s->n_meta, SESSION_MAX_META_RANGES);
        ASSERT_EQ(s->meta[s->n_meta - 1].n_pages, 2);
        session_free(s);
}

/* Paths are kept as their directory (once) and their last component; each comes back whole. */
TEST(session_paths) {
        Session *s = NULL;
        char path[64];

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        for (uint32_t i = 0; i < 1000; i++) {
                FileKey k = key(i);
                ASSERT_EQ(session_add(s, &k, i), 1);
        }
        ASSERT_TRUE(session_path(s, 0) == NULL);
        ASSERT_OK(session_set_path(s, 0, "/vmlinuz"));
        ASSERT_OK(session_set_path(s, 1, "relative"));
        ASSERT_OK(session_set_path(s, 2, "/usr/lib/libc.so.6"));
        ASSERT_OK(session_set_path(s, 3, "/usr/lib/"));
        ASSERT_OK(session_set_path(s, 4, "/usr/lib/x86_64/libm.so.6"));
        ASSERT_OK(session_set_path(s, 5, "/usr/lib/libm.so.6"));
        ASSERT_OK(session_set_path(s, 6, "/usr/lib/gone"));
        ASSERT_OK(session_set_path(s, 6, NULL));
        /* 500 directories (the directory table grows several times), two files in each */
        for (uint32_t i = 10; i < 1000; i++) {
                snprintf(path, sizeof path, "/d/%u/f%u", i / 2, i);
                ASSERT_OK(session_set_path(s, i, path));
        }
        const char *want[] = { "/vmlinuz", "relative", "/usr/lib/libc.so.6", "/usr/lib/", "/usr/lib/x86_64/libm.so.6",
                               "/usr/lib/libm.so.6" };
        for (size_t i = 0; i < TEST_ELEMENTSOF(want); i++) {
                _cleanup_free_ char *p = session_path(s, i);
                ASSERT_STREQ(p, want[i]);
        }
        ASSERT_TRUE(s->files[6].path == 0 && session_path(s, 6) == NULL);
        for (uint32_t i = 10; i < 1000; i++) {
                _cleanup_free_ char *p = session_path(s, i);
                snprintf(path, sizeof path, "/d/%u/f%u", i / 2, i);
                ASSERT_STREQ(p, path);
        }
        /* "", "/usr/lib", "/usr/lib/x86_64" and the 495 under /d */
        ASSERT_EQ(s->paths.n_dirs, 3 + 495);
        session_free(s);
}

/* A file's page set keeps one span in place (no allocation) until a second span, or a span beyond 32 bits,
 * needs the allocated array; ranges longer than 32 bits of pages are cut. */
TEST(session_page_set_in_place) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11), c = key(12);
        uint32_t f;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        ASSERT_EQ(session_add(s, &a, 0), 1);
        ASSERT_EQ(session_add(s, &b, 0), 1);
        ASSERT_EQ(session_add(s, &c, 0), 1);

        /* A: 10-19, then 20-24 and 5-9 touch it: one span 5-24, still in place */
        ASSERT_EQ(session_add_pages(s, 0, 10, 10, 100), 10);
        ASSERT_EQ(s->seen[0].n, 1);
        ASSERT_EQ(s->seen[0].allocated, 0);
        ASSERT_EQ(session_add_pages(s, 0, 20, 5, 200), 5);
        ASSERT_EQ(session_add_pages(s, 0, 5, 5, 300), 5);
        ASSERT_EQ(session_add_pages(s, 0, 12, 3, 400), 0);     /* seen: cut out */
        ASSERT_EQ(s->seen[0].n, 1);
        ASSERT_EQ(s->seen[0].allocated, 0);
        ASSERT_EQ(page_set_span(&s->seen[0], 0).first, 5);
        ASSERT_EQ(page_set_span(&s->seen[0], 0).n, 20);
        /* a second span apart (too far to join the range): allocated, both kept in order */
        ASSERT_EQ(session_add_pages(s, 0, 50, 2, 500), 2);
        ASSERT_EQ(s->seen[0].n, 2);
        ASSERT_TRUE(s->seen[0].allocated >= 2);
        ASSERT_EQ(page_set_span(&s->seen[0], 0).first, 5);
        ASSERT_EQ(page_set_span(&s->seen[0], 0).n, 20);
        ASSERT_EQ(page_set_span(&s->seen[0], 1).first, 50);
        ASSERT_EQ(page_set_span(&s->seen[0], 1).n, 2);
        /* bridged: one span again (it stays allocated), only the gap is new */
        ASSERT_EQ(session_add_pages(s, 0, 0, 60, 600), 5 + 25 + 8);
        ASSERT_EQ(s->seen[0].n, 1);
        ASSERT_EQ(s->seen[0].spans[0].first, 0);
        ASSERT_EQ(s->seen[0].spans[0].n, 60);

        /* B: a span beyond 32 bits of pages cannot stay in place */
        ASSERT_EQ(session_add_pages(s, 1, (uint64_t) UINT32_MAX + 10, 3, 700), 3);
        ASSERT_EQ(s->seen[1].n, 1);
        ASSERT_TRUE(s->seen[1].allocated > 0);
        ASSERT_EQ(page_set_span(&s->seen[1], 0).first, (uint64_t) UINT32_MAX + 10);
        ASSERT_EQ(session_add_pages(s, 1, (uint64_t) UINT32_MAX + 11, 1, 800), 0);

        /* C: 2^32 + 5 pages in one event: one new piece, two ranges, the second continuing the first */
        size_t t = s->n_touches;
        ASSERT_EQ(session_add_pages(s, 2, 0, (uint64_t) UINT32_MAX + 5, 900), INT_MAX);
        ASSERT_EQ(s->n_touches, t + 2);
        assert_range(s, t, 2, 0, UINT32_MAX, 900);
        assert_range(s, t + 1, 2, UINT32_MAX, 5, 900);
        /* and a piece continuing it extends the last one */
        ASSERT_EQ(session_add_pages(s, 2, (uint64_t) UINT32_MAX + 5, 3, 1000), 3);
        ASSERT_EQ(s->n_touches, t + 2);
        assert_range(s, t + 1, 2, UINT32_MAX, 8, 900);

        /* the inode cache keeps 32-bit devices and inode numbers (page events are for ext4 only) */
        ASSERT_EQ(session_inode_put(s, 7, (uint64_t) UINT32_MAX + 1, 1), -EOVERFLOW);
        ASSERT_EQ(session_inode_put(s, (uint64_t) UINT32_MAX + 1, 5, 1), -EOVERFLOW);
        ASSERT_EQ(session_inode_put(s, 0, 5, 1), -EINVAL);
        ASSERT_EQ(session_inode_get(s, 7, (uint64_t) UINT32_MAX + 1, &f), -ENOENT);
        ASSERT_OK(session_inode_put(s, UINT32_MAX, UINT32_MAX, SESSION_INODE_LEFT_OUT));
        ASSERT_OK(session_inode_get(s, UINT32_MAX, UINT32_MAX, &f));
        ASSERT_EQ(f, SESSION_INODE_LEFT_OUT);
        ASSERT_OK(session_inode_put(s, UINT32_MAX, UINT32_MAX, 2));      /* a second put replaces the first */
        ASSERT_OK(session_inode_get(s, UINT32_MAX, UINT32_MAX, &f));
        ASSERT_EQ(f, 2);
        ASSERT_EQ(s->n_inodes, 1);
        /* the same inode number on another device is another inode */
        ASSERT_EQ(session_inode_get(s, 7, UINT32_MAX, &f), -ENOENT);
        ASSERT_OK(session_inode_put(s, 7, UINT32_MAX, 0));
        ASSERT_OK(session_inode_get(s, 7, UINT32_MAX, &f));
        ASSERT_EQ(f, 0);
        ASSERT_OK(session_inode_get(s, UINT32_MAX, UINT32_MAX, &f));
        ASSERT_EQ(f, 2);
        ASSERT_EQ(s->n_inodes, 2);
        session_free(s);
}

/* Joining the last range: new pages of its file less than SESSION_RANGE_JOIN_PAGES after its end or before
 * its start join it over the gap, unless a page between is in a range already or another file's range
 * came between. */
TEST(session_range_join) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11);

        ASSERT_OK(session_new(PROFILE_APP, "/bin/x", 0, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(session_add(s, &a, 0), 1);
        ASSERT_EQ(session_add(s, &b, 0), 1);
        /* every other page forward: one range */
        for (uint64_t p = 0; p < 200; p += 2)
                ASSERT_EQ(session_add_pages(s, 0, p, 1, 100 + p), 1);
        ASSERT_EQ(s->n_touches, 1);
        assert_range(s, 0, 0, 0, 199, 100);
        /* the pages between are seen now: nothing new */
        ASSERT_EQ(session_add_pages(s, 0, 1, 1, 500), 0);
        /* the largest gap that joins, then one page more */
        ASSERT_EQ(session_add_pages(s, 0, 199 + SESSION_RANGE_JOIN_PAGES - 1, 1, 600), 1);
        ASSERT_EQ(s->n_touches, 1);
        ASSERT_EQ(s->touches[0].n_pages, 199 + SESSION_RANGE_JOIN_PAGES);
        ASSERT_EQ(session_add_pages(s, 0, 1000 + SESSION_RANGE_JOIN_PAGES, 1, 700), 1);
        ASSERT_EQ(session_add_pages(s, 0, 1000 + 2 * SESSION_RANGE_JOIN_PAGES + 1, 1, 700), 1);
        ASSERT_EQ(s->n_touches, 3);
        /* backwards, page by page and in strides: one range, its first touch kept */
        ASSERT_EQ(session_add_pages(s, 1, 5000, 4, 800), 4);
        for (uint64_t p = 4999; p >= 4900; p -= 3)
                ASSERT_EQ(session_add_pages(s, 1, p, 1, 900), 1);
        ASSERT_EQ(s->n_touches, 4);
        assert_range(s, 3, 1, 4900, 104, 800);
        /* the gap back to B's range holds pages of it: 4850 starts a range of its own, and 4860-4899
         * joins that one, not the older */
        ASSERT_EQ(session_add_pages(s, 1, 4850, 1, 1000), 1);
        ASSERT_EQ(session_add_pages(s, 1, 4860, 40, 1000), 40);
        ASSERT_EQ(s->n_touches, 5);
        assert_range(s, 4, 1, 4850, 50, 1000);
        /* another file's range between: A's pages right after its last range are a range of their own */
        ASSERT_EQ(session_add_pages(s, 0, 1000 + 2 * SESSION_RANGE_JOIN_PAGES + 2, 1, 1100), 1);
        ASSERT_EQ(s->n_touches, 6);
        ASSERT_EQ(s->seen[0].ranges, 4);
        ASSERT_EQ(s->seen[1].ranges, 2);
        ASSERT_TRUE(!s->incomplete && !s->ranges_full && s->skipped_pages == 0);
        ASSERT_ERROR(session_add_pages(s, 0, UINT64_MAX - 1, 2, 1200), EINVAL);
        session_free(s);
}

/* The caps: SESSION_MAX_FILE_RANGES ranges of one file, max_ranges of the session. Pages past them that
 * would start a range are counted, not kept; pages continuing the last range and pages seen are not
 * affected; the session is marked incomplete. */
TEST(session_range_caps) {
        Session *s = NULL;
        FileKey a = key(10), b = key(11), c = key(12);
        const uint64_t stride = 2 * SESSION_RANGE_JOIN_PAGES;

        /* a launch keeps fewer than the boot, which keeps as many as its files may be */
        ASSERT_OK(session_new(PROFILE_APP, "/bin/x", 0, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(s->max_ranges, SESSION_MAX_LAUNCH_RANGES);
        s = session_free(s);
        ASSERT_EQ(session_max_ranges(PROFILE_APP, 200000), SESSION_MAX_LAUNCH_RANGES);
        ASSERT_EQ(session_max_ranges(PROFILE_BOOT, 200000), 200000);
        ASSERT_EQ(session_max_ranges(PROFILE_BOOT, 100), SESSION_MAX_RANGES);
        ASSERT_EQ(session_max_ranges(PROFILE_BOOT, 0), 0);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, 10 * USEC_PER_SEC, &s));
        ASSERT_EQ(s->max_ranges, SESSION_MAX_RANGES);
        ASSERT_EQ(session_add(s, &a, 0), 1);
        ASSERT_EQ(session_add(s, &b, 0), 1);
        ASSERT_EQ(session_add(s, &c, 0), 1);
        /* A, backwards in strides too far apart to join: the worst order for the sorted spans */
        for (uint64_t i = SESSION_MAX_FILE_RANGES; i > 0; i--)
                ASSERT_EQ(session_add_pages(s, 0, i * stride, 1, i), 1);
        ASSERT_EQ(s->n_touches, SESSION_MAX_FILE_RANGES);
        ASSERT_EQ(s->seen[0].n, SESSION_MAX_FILE_RANGES);
        ASSERT_TRUE(s->seen[0].allocated <= 2 * SESSION_MAX_FILE_RANGES);
        ASSERT_TRUE(!s->incomplete && !s->ranges_full);
        /* one more range of A: left out, counted */
        ASSERT_EQ(session_add_pages(s, 0, 3, 4, 10), 0);
        ASSERT_TRUE(s->incomplete && s->ranges_full);
        ASSERT_EQ(s->skipped_pages, 4);
        ASSERT_EQ(s->n_touches, SESSION_MAX_FILE_RANGES);
        /* an event over seen and new pages of A: the seen ones are nothing, the new ones counted */
        ASSERT_EQ(session_add_pages(s, 0, 2 * stride - 1, 3, 11), 0);
        ASSERT_EQ(s->skipped_pages, 6);
        /* continuing A's last range (page stride, read last) still extends it */
        ASSERT_EQ(session_add_pages(s, 0, stride + 1, 2, 12), 2);
        ASSERT_EQ(s->touches[s->n_touches - 1].n_pages, 3);
        ASSERT_EQ(s->seen[0].n, SESSION_MAX_FILE_RANGES);
        /* B is not A */
        ASSERT_EQ(session_add_pages(s, 1, 0, 1, 13), 1);
        ASSERT_EQ(s->seen[1].ranges, 1);

        /* the session's cap */
        s->max_ranges = s->n_touches + 2;
        ASSERT_EQ(session_add_pages(s, 2, 0, 1, 14), 1);
        ASSERT_EQ(session_add_pages(s, 1, 100, 1, 15), 1);
        ASSERT_EQ(s->n_touches, s->max_ranges);
        ASSERT_EQ(session_add_pages(s, 2, 100, 5, 16), 0);
        ASSERT_EQ(s->skipped_pages, 11);
        ASSERT_EQ(session_add_pages(s, 1, 101, 5, 17), 5);     /* continues the last range */
        ASSERT_EQ(s->n_touches, s->max_ranges);
        /* no limit */
        s->max_ranges = 0;
        ASSERT_EQ(session_add_pages(s, 2, 100, 5, 18), 5);
        session_free(s);
}

/* A page set and the ranges against a bitmap per file, under random events (folios of 1-64 pages anywhere,
 * runs forwards and backwards, strides, pages read again), with and without caps: the set is sorted,
 * disjoint and never adjacent; it is exactly the union of the file's ranges, which never overlap; every page
 * of an event is in it afterwards or counted as left out; what an event reports new is what was not in the
 * set before, less what was left out; the ranges keep first-touch order. */
#define REF_FILES 4
#define REF_PAGES 100000

static uint64_t rng_next(uint64_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        return *x;
}

/* The union of the ranges, and each file's set against it. */
static void ref_check(const Session *s, uint8_t ref[REF_FILES][REF_PAGES]) {
        static uint8_t cover[REF_FILES][REF_PAGES];
        uint32_t ranges[REF_FILES] = {};

        memset(cover, 0, sizeof cover);
        for (size_t i = 0; i < s->n_touches; i++) {
                const SessionRange *t = &s->touches[i];

                ASSERT_TRUE(t->file < REF_FILES && t->n_pages > 0 && t->first_page + t->n_pages <= REF_PAGES);
                ASSERT_TRUE(i == 0 || t->offset_usec >= s->touches[i - 1].offset_usec);
                ranges[t->file]++;
                for (uint64_t p = t->first_page; p < t->first_page + t->n_pages; p++) {
                        ASSERT_EQ(cover[t->file][p], 0);        /* ranges never overlap */
                        cover[t->file][p] = 1;
                }
        }
        ASSERT_TRUE(memcmp(cover, ref, sizeof cover) == 0);
        for (uint32_t f = 0; f < REF_FILES; f++) {
                const PageSet *ps = f < s->n_seen_files ? &s->seen[f] : &(PageSet) {};
                uint64_t prev_end = 0;
                size_t p = 0;

                ASSERT_EQ(ps->ranges, ranges[f]);
                ASSERT_TRUE(ps->n <= ps->ranges && ps->n <= SESSION_MAX_FILE_RANGES);
                ASSERT_TRUE(ps->allocated == 0 ? ps->n <= 1 : ps->n <= ps->allocated);
                for (uint32_t i = 0; i < ps->n; i++) {
                        PageSpan sp = page_set_span(ps, i);

                        ASSERT_TRUE(sp.n > 0 && (i == 0 || sp.first > prev_end));       /* apart */
                        for (; p < sp.first; p++)
                                ASSERT_EQ(cover[f][p], 0);
                        for (; p < sp.first + sp.n; p++)
                                ASSERT_EQ(cover[f][p], 1);
                        prev_end = sp.first + sp.n;
                }
                for (; p < REF_PAGES; p++)
                        ASSERT_EQ(cover[f][p], 0);
        }
}

static void ref_run(uint64_t seed, size_t max_ranges, unsigned n_events) {
        static uint8_t ref[REF_FILES][REF_PAGES];
        Session *s = NULL;
        uint64_t x = seed, cursor[REF_FILES] = {};
        size_t max_spans = 0;

        memset(ref, 0, sizeof ref);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, 10 * USEC_PER_SEC, &s));
        s->max_ranges = max_ranges;
        for (uint32_t f = 0; f < REF_FILES; f++) {
                FileKey k = key(100 + f);
                ASSERT_EQ(session_add(s, &k, 0), 1);
        }
        for (unsigned e = 0; e < n_events; e++) {
                uint32_t f = (uint32_t) (rng_next(&x) % REF_FILES);
                uint64_t r = rng_next(&x), n = UINT64_C(1) << (r % 7), first, fresh = 0, skipped;
                size_t before = s->n_touches;
                int k;

                switch ((r >> 8) % 4) {
                case 0:                 /* anywhere */
                        first = (r >> 16) % REF_PAGES;
                        break;
                case 1:                 /* on from the file's last event, sometimes a stride */
                        first = cursor[f] + ((r >> 16) % 3 == 0 ? (r >> 20) % 40 : 0);
                        break;
                case 2:                 /* back from it */
                        first = cursor[f] > n + (r >> 16) % 40 ? cursor[f] - n - (r >> 16) % 40 : 0;
                        break;
                default:                /* read again */
                        first = cursor[f] > 8 ? cursor[f] - 8 : 0;
                        break;
                }
                first = MIN(first, (uint64_t) REF_PAGES - 1);
                n = MIN(n, REF_PAGES - first);
                for (uint64_t p = first; p < first + n; p++)
                        fresh += !ref[f][p];
                skipped = s->skipped_pages;
                k = session_add_pages(s, f, first, n, e);
                ASSERT_TRUE(k >= 0);
                ASSERT_EQ((uint64_t) k + (s->skipped_pages - skipped), fresh);
                /* the reference: the ranges this event made or changed (the last one before it, extended) */
                for (size_t i = before > 0 ? before - 1 : 0; i < s->n_touches; i++)
                        memset(&ref[s->touches[i].file][s->touches[i].first_page], 1, s->touches[i].n_pages);
                /* the pages of the event are in the set now, unless some were left out */
                if (s->skipped_pages == skipped)
                        for (uint64_t p = first; p < first + n; p++)
                                ASSERT_EQ(ref[f][p], 1);
                cursor[f] = first + n;
                max_spans = MAX(max_spans, (size_t) s->seen[f].n);
                if (e % 1024 == 0 || e + 1 == n_events)
                        ref_check(s, ref);
        }
        /* fragmented enough to mean something */
        ASSERT_TRUE(max_spans > (max_ranges > 0 && max_ranges < 1000 ? max_ranges / REF_FILES / 2 : 500));
        if (max_ranges > 0 && max_ranges < 1000) {
                ASSERT_EQ(s->n_touches, max_ranges);
                ASSERT_EQ(s->allocated_touches, max_ranges);    /* grown to the cap, not past it */
                ASSERT_TRUE(s->ranges_full && s->incomplete && s->skipped_pages > 0);
        } else
                ASSERT_TRUE(!s->ranges_full && !s->incomplete);
        session_free(s);
}

TEST(session_page_set_reference) {
        ref_run(0x9E3779B97F4A7C15ULL, SESSION_MAX_RANGES, 20000);
        ref_run(12345, 0, 20000);
        ref_run(777, 300, 20000);       /* the session's cap reached early */
}

/* 100,000 files read once each (the memory benchmark's boot): every file, path, inode and page found
 * again, within a bound of bytes per file. */
TEST(session_many_files_pages) {
        Session *s = NULL;
        char path[64];
        uint32_t f;

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        s->max_ranges = 200000;         /* the benchmark's MaxSessionFiles=, which the manager takes */
        for (uint32_t i = 0; i < 100000; i++) {
                FileKey k = key(i * 2654435761u);

                ASSERT_EQ(session_add(s, &k, i), 1);
                snprintf(path, sizeof path, "/tmp/seekless-bench.abcdef/mnt/rss/%u/f%06u", i / 10000, i);
                ASSERT_OK(session_set_path(s, i, path));
                ASSERT_OK(session_inode_put(s, 0x700001, i + 12, i));
                ASSERT_EQ(session_add_pages(s, i, 0, 1, i), 1);
        }
        ASSERT_OK(session_inode_put(s, 0x700001, 11, SESSION_INODE_LEFT_OUT));
        for (uint32_t i = 0; i < 100000; i++) {
                FileKey k = key(i * 2654435761u);

                ASSERT_EQ(session_index(s, &k), (ssize_t) i);
                snprintf(path, sizeof path, "/tmp/seekless-bench.abcdef/mnt/rss/%u/f%06u", i / 10000, i);
                _cleanup_free_ char *named = session_path(s, i);
                ASSERT_STREQ(named, path);
                ASSERT_OK(session_inode_get(s, 0x700001, i + 12, &f));
                ASSERT_EQ(f, i);
                ASSERT_EQ(session_add_pages(s, i, 0, 1, 200000), 0);
                ASSERT_EQ(s->seen[i].allocated, 0);
        }
        ASSERT_OK(session_inode_get(s, 0x700001, 11, &f));
        ASSERT_EQ(f, SESSION_INODE_LEFT_OUT);
        ASSERT_EQ(session_inode_get(s, 0x700002, 12, &f), -ENOENT);
        ASSERT_EQ(s->n_inodes, 100001);
        ASSERT_EQ(s->n_touches, 100000);
        /* allocated, the arrays' spare capacity included (131,072 files, ranges and page sets): 56 B a file,
         * 24 B a range, 16 B a page set (the page in place), its path (12 B: the directory is stored once),
         * 8 B an inode and 4 B a key bucket at 3/4 load at most: 163 B (with a copy of each path, an
         * allocation per page set, 24-byte inodes and half-empty tables it was about 320 B) */
        ASSERT_TRUE(session_memory(s) < 100000u * 180);
        /* sealed for storing: the files, their paths and ranges stay, the lookup structures go */
        size_t before = session_memory(s);
        session_seal(s);
        ASSERT_TRUE(session_memory(s) + 100000u * (16 + 8) < before);
        ASSERT_EQ(s->n_files, 100000);
        ASSERT_EQ(s->n_touches, 100000);
        for (uint32_t i = 0; i < 100000; i += 997) {
                FileKey k = key(i * 2654435761u);
                _cleanup_free_ char *named = session_path(s, i);

                ASSERT_TRUE(file_key_equal(&s->files[i].key, &k));
                snprintf(path, sizeof path, "/tmp/seekless-bench.abcdef/mnt/rss/%u/f%06u", i / 10000, i);
                ASSERT_STREQ(named, path);
                assert_range(s, i, i, 0, 1, i);
        }
        session_free(s);
}

static void write_file(const char *dir, const char *name, const char *content) {
        char p[PATH_MAX];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        f = fopen(p, "we");
        ASSERT_TRUE(f);
        fputs(content, f);
        fclose(f);
}

static void fake_proc(const char *root, int pid, int ppid, const char *comm, const char *cgroup) {
        char d[PATH_MAX], stat[256], cg[512];

        snprintf(d, sizeof d, "%s/%i", root, pid);
        ASSERT_TRUE(mkdir(d, 0755) == 0);
        snprintf(stat, sizeof stat, "%i (%s) S %i 1 1 0 -1\n", pid, comm, ppid);
        write_file(d, "stat", stat);
        snprintf(cg, sizeof cg, "0::%s\n", cgroup);
        write_file(d, "cgroup", cg);
}

TEST(pidmap_attribution) {
        char root[] = "/tmp/test-session-proc.XXXXXX";
        Session *launch = NULL, *desktop = NULL;
        PidMap m;

        ASSERT_TRUE(mkdtemp(root));
        fake_proc(root, 100, 1, "bash", "/user.slice/session-1.scope");
        fake_proc(root, 200, 100, "prog", "/user.slice/session-1.scope");
        fake_proc(root, 201, 200, "child (with) parens", "/user.slice/session-1.scope");
        fake_proc(root, 202, 201, "grandchild", "/user.slice/session-1.scope");
        fake_proc(root, 300, 100, "unrelated", "/user.slice/session-1.scope");
        fake_proc(root, 400, 1, "gnome-app", "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-foo-42.scope");
        fake_proc(root, 401, 1, "dbus-activated", "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-foo-42.scope");

        pid_t ppid;
        ASSERT_OK(proc_get_ppid(root, 201, &ppid));
        ASSERT_EQ(ppid, 200);
        ASSERT_ERROR(proc_get_ppid(root, 999, &ppid), ENOENT);

        /* the real uid: the first of the four (a setuid program's effective uid is the second) */
        char d[PATH_MAX];
        uid_t uid;
        snprintf(d, sizeof d, "%s/200", root);
        write_file(d, "status", "Name:\tprog\nUmask:\t0022\nPid:\t200\n"
                                "Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n");
        ASSERT_OK(proc_get_uid(root, 200, &uid));
        ASSERT_EQ(uid, 1000);
        snprintf(d, sizeof d, "%s/201", root);
        write_file(d, "status", "Name:\tx\nUid:\t\t\n");
        ASSERT_ERROR(proc_get_uid(root, 201, &uid), EBADMSG);
        snprintf(d, sizeof d, "%s/202", root);
        write_file(d, "status", "Name:\tx\n");
        ASSERT_ERROR(proc_get_uid(root, 202, &uid), ENODATA);
        ASSERT_ERROR(proc_get_uid(root, 999, &uid), ENOENT);
        ASSERT_EQ(uid, 1000);   /* untouched on failure */
        ASSERT_OK(proc_get_uid("/proc", getpid(), &uid));
        ASSERT_EQ(uid, getuid());

        ASSERT_OK(session_new(PROFILE_APP, "/bin/prog", 0, USEC_PER_SEC, &launch));
        launch->root_pid = 200;
        ASSERT_OK(session_new(PROFILE_APP, "/bin/foo", 0, USEC_PER_SEC, &desktop));
        desktop->root_pid = 400;
        char *cg = NULL;
        ASSERT_OK(proc_get_cgroup(root, 400, &cg));
        ASSERT_TRUE(cgroup_app_unit(cg) != NULL);
        desktop->cgroup = cg;
        launch->next = desktop;

        pidmap_init(&m, root);
        ASSERT_TRUE(pidmap_lookup(&m, launch, 200) == launch);
        ASSERT_TRUE(pidmap_lookup(&m, launch, 202) == launch);   /* grandchild */
        ASSERT_TRUE(pidmap_lookup(&m, launch, 201) == launch);   /* cached on the way */
        ASSERT_TRUE(pidmap_lookup(&m, launch, 300) == NULL);     /* sibling of the launcher */
        ASSERT_TRUE(pidmap_lookup(&m, launch, 100) == NULL);     /* the launcher itself */
        ASSERT_TRUE(pidmap_lookup(&m, launch, 401) == desktop);  /* same app scope, not a descendant */
        ASSERT_TRUE(pidmap_lookup(&m, launch, 999) == NULL);     /* exited before we looked */
        ASSERT_TRUE(pidmap_lookup(&m, NULL, 200) == NULL);

        ASSERT_TRUE(cgroup_app_unit("/user.slice/session-2.scope") == NULL);
        ASSERT_TRUE(cgroup_app_unit("/a/app-firefox@1.service") != NULL);

        pidmap_done(&m);
        session_free(desktop);
        launch->next = NULL;
        session_free(launch);
        char cmd[PATH_MAX];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        ASSERT_EQ(system(cmd), 0);
}

/* Real uids for the boot session's share of users: from /proc (the first field of Uid:), remembered; a uid
 * change noted wins; a fork's child has its parent's (what an earlier process of its pid had is gone); a
 * process gone before it was looked at, its nearest known ancestor's; nothing known: UID_INVALID. */
TEST(pidmap_uids) {
        char root[] = "/tmp/test-session-uids.XXXXXX", d[PATH_MAX], cmd[PATH_MAX];
        PidMap m;

        ASSERT_TRUE(mkdtemp(root));
        snprintf(d, sizeof d, "%s/500", root);
        ASSERT_EQ(mkdir(d, 0755), 0);
        write_file(d, "status", "Name:\tcron\nUid:\t0\t0\t0\t0\n");
        snprintf(d, sizeof d, "%s/600", root);
        ASSERT_EQ(mkdir(d, 0755), 0);
        write_file(d, "status", "Name:\tjob\nUid:\t65534\t0\t0\t0\n");

        pidmap_init(&m, root);
        pidmap_track_uids(&m, true);
        ASSERT_EQ(pidmap_uid(&m, 500), 0);
        ASSERT_EQ(pidmap_uid(&m, 600), 65534);
        /* remembered: the fixture changing does not change the answer */
        write_file(d, "status", "Name:\tjob\nUid:\t0\t0\t0\t0\n");
        ASSERT_EQ(pidmap_uid(&m, 600), 65534);
        /* cron (500) forks 501, which takes the user's uid before it runs the job; both exit unseen */
        pidmap_note_fork(&m, 501, 500);
        ASSERT_EQ(pidmap_uid(&m, 501), 0);
        pidmap_note_uid(&m, 501, 1000);
        ASSERT_EQ(pidmap_uid(&m, 501), 1000);
        pidmap_note_fork(&m, 502, 501);
        ASSERT_EQ(pidmap_uid(&m, 502), 1000);
        /* pid 501 used again by another fork of cron: root's again */
        pidmap_note_fork(&m, 501, 500);
        ASSERT_EQ(pidmap_uid(&m, 501), 0);
        /* never seen, gone: so it stays (its reads come in bursts), until a fork makes a new process of it */
        ASSERT_EQ(pidmap_uid(&m, 999), UID_INVALID);
        snprintf(d, sizeof d, "%s/999", root);
        ASSERT_EQ(mkdir(d, 0755), 0);
        write_file(d, "status", "Name:\tlate\nUid:\t0\t0\t0\t0\n");
        ASSERT_EQ(pidmap_uid(&m, 999), UID_INVALID);
        pidmap_note_fork(&m, 999, 12345);
        ASSERT_EQ(pidmap_uid(&m, 999), 0);
        ASSERT_EQ(pidmap_uid(&m, 0), UID_INVALID);
        /* a subshell (701) and its child (702), gone, forked by a process not known then (700): the
         * nearest ancestor known at the time of the lookup */
        pidmap_note_fork(&m, 701, 700);
        pidmap_note_fork(&m, 702, 701);
        snprintf(d, sizeof d, "%s/700", root);
        ASSERT_EQ(mkdir(d, 0755), 0);
        write_file(d, "status", "Name:\tsh\nUid:\t1000\t1000\t1000\t1000\n");
        ASSERT_EQ(pidmap_uid(&m, 702), 1000);
        /* off: nothing kept, /proc asked each time */
        pidmap_track_uids(&m, false);
        ASSERT_EQ(pidmap_uid(&m, 600), 0);
        pidmap_note_uid(&m, 600, 1000);
        ASSERT_EQ(pidmap_uid(&m, 600), 0);
        pidmap_done(&m);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        ASSERT_EQ(system(cmd), 0);
}

/* A maps line for a real file, with its real device and inode (or a wrong inode). */
static void maps_line(char *buf, size_t size, const char *perms, const char *path, int ino_delta) {
        struct stat st;

        ASSERT_TRUE(stat(path, &st) == 0);
        snprintf(buf, size, "7f0000000000-7f0000001000 %s 00000000 %02x:%02x %lu                %s\n", perms,
                 major(st.st_dev), minor(st.st_dev), (unsigned long) st.st_ino + ino_delta, path);
}

static FileKey key_of(const char *path) {
        FileKey k;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(file_key_from_fd(fd, &k));
        close(fd);
        return k;
}

TEST(boot_seed_from_maps) {
        char root[] = "/tmp/test-session-seed.XXXXXX", files[] = "/tmp/test-session-files.XXXXXX";
        char exe[PATH_MAX], lib[PATH_MAX], shm[PATH_MAX], gone[PATH_MAX], dir[PATH_MAX], l[4 * PATH_MAX + 512];
        char a[PATH_MAX + 128], b[PATH_MAX + 128], c[PATH_MAX + 128], d[PATH_MAX + 128], e[PATH_MAX + 128];
        Filesystem fs = {};
        FilesystemList watched = { .items = &fs, .n = 1 }, none = {};
        Session *s = NULL;

        ASSERT_TRUE(mkdtemp(root));
        ASSERT_TRUE(mkdtemp(files));
        snprintf(exe, sizeof exe, "%s/prog", files);
        snprintf(lib, sizeof lib, "%s/lib.so", files);
        snprintf(shm, sizeof shm, "%s/db-shm", files);
        snprintf(gone, sizeof gone, "%s/gone", files);
        write_file(files, "prog", "x");
        write_file(files, "lib.so", "x");
        write_file(files, "db-shm", "x");
        write_file(files, "gone", "x");
        ASSERT_OK(fsid_of_path(files, &fs.fsid));

        /* pid 10 started after pid 9: 9's files come first although "10" sorts first as a name */
        snprintf(dir, sizeof dir, "%s/10", root);
        ASSERT_TRUE(mkdir(dir, 0755) == 0);
        maps_line(a, sizeof a, "r--p", exe, 0);         /* already seeded by pid 9 */
        maps_line(b, sizeof b, "rw-s", shm, 0);         /* shared writable: being written */
        maps_line(c, sizeof c, "r-xp", lib, 0);
        snprintf(l, sizeof l, "%s%s%s%s", a, b, c,
                 "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n");
        write_file(dir, "maps", l);

        snprintf(dir, sizeof dir, "%s/9", root);
        ASSERT_TRUE(mkdir(dir, 0755) == 0);
        maps_line(a, sizeof a, "r--p", exe, 0);
        maps_line(b, sizeof b, "r-xp", exe, 0);         /* the same file in several pieces */
        maps_line(c, sizeof c, "r--p", gone, 1);        /* the path now names another inode */
        maps_line(d, sizeof d, "r--p", gone, 0);
        memcpy(d + strlen(d) - 1, " (deleted)\n", 12);  /* a deleted file */
        maps_line(e, sizeof e, "r--p", "/proc/self/status", 0);  /* not regular, not watched */
        snprintf(l, sizeof l, "%s%s%s%s%s", a, b, c, d, e);
        write_file(dir, "maps", l);
        snprintf(dir, sizeof dir, "%s/self", root);     /* not a pid */
        ASSERT_TRUE(mkdir(dir, 0755) == 0);

        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        ASSERT_EQ(boot_seed_from_maps(s, &watched, root, 0, 5), 2);
        ASSERT_EQ(s->n_files, 2);
        FileKey k_exe = key_of(exe), k_lib = key_of(lib);
        ASSERT_TRUE(file_key_equal(&s->files[0].key, &k_exe));
        ASSERT_TRUE(file_key_equal(&s->files[1].key, &k_lib));
        /* seeding again adds nothing; a filesystem that is not watched gives nothing */
        ASSERT_EQ(boot_seed_from_maps(s, &watched, root, 0, 6), 0);
        session_free(s);
        ASSERT_OK(session_new(PROFILE_BOOT, "boot", 0, USEC_PER_SEC, &s));
        ASSERT_EQ(boot_seed_from_maps(s, &none, root, 0, 5), 0);
        ASSERT_EQ(s->n_files, 0);
        ASSERT_ERROR(boot_seed_from_maps(s, &watched, "/nonexistent-proc", 0, 5), ENOENT);
        session_free(s);

        char cmd[3 * PATH_MAX];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, files);
        ASSERT_EQ(system(cmd), 0);
}

TEST(mountinfo) {
        char dir[] = "/tmp/test-session-mi.XXXXXX";
        char path[PATH_MAX];
        FilesystemList l = {}, u = {};

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/mountinfo", dir);
        /* "/" and /tmp exist here, so statfs() works for them; the rest tests the filters */
        write_file(dir, "mountinfo",
                   "21 1 254:0 /var /tmp rw,relatime shared:1 - ext4 /dev/vda rw\n"
                   "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                   "23 22 254:0 /var /srv/bind rw,relatime shared:1 - ext4 /dev/vda rw\n"
                   "24 22 7:1 / /tmp ro,relatime - ext4 /dev/loop1 ro\n"
                   "25 22 0:5 / /proc rw - proc proc rw\n"
                   "26 22 7:2 / /tmp rw - xfs /dev/loop2 rw\n"
                   "27 22 7:3 / /does/not/exist rw - ext4 /dev/loop3 rw\n");
        ASSERT_OK(mounts_scan(path, NULL, &l, NULL));
        /* the bind mounts are the same device (counted once, as the mount of its root, although a bind
         * of a subdirectory came first), the ro superblock, proc, xfs and the unreachable mount point are
         * left out */
        ASSERT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].mount, "/");
        ASSERT_EQ(major(l.items[0].dev), 254);
        filesystem_list_clear(&l);

        /* the same with the filesystems on a device left out, and why: the ro superblock and xfs (proc
         * is on no device, the last mount point unreachable) */
        ASSERT_OK(mounts_scan(path, NULL, &l, &u));
        ASSERT_EQ(l.n, 1);
        ASSERT_EQ(u.n, 2);
        ASSERT_EQ(minor(u.items[0].dev), 1);
        ASSERT_STREQ(unwatched_to_string(u.items[0].unwatched), "mounted read-only");
        ASSERT_EQ(minor(u.items[1].dev), 2);
        ASSERT_STREQ(u.items[1].fstype, "xfs");
        ASSERT_STREQ(unwatched_to_string(u.items[1].unwatched), "not ext4");
        filesystem_list_clear(&l);
        filesystem_list_clear(&u);

        /* pinned: the filesystem of "/" (pinned through a path on it) is found; a pin of another
         * filesystem finds nothing, whatever the mount points are */
        FilesystemPins pins = {};
        const char *failed = NULL;
        char *const root_path[] = { (char *) "/etc", NULL }, *const missing[] = { (char *) "/nonexistent", NULL };
        ASSERT_OK(filesystem_pins_make(root_path, &pins, &failed));
        ASSERT_EQ(pins.n, 1);
        ASSERT_OK(mounts_scan(path, &pins, &l, NULL));
        ASSERT_EQ(l.n, 1);
        ASSERT_STREQ(l.items[0].mount, "/");
        filesystem_list_clear(&l);
        /* a pin of another filesystem: the read-write ext4 one is "not given"; the others keep the reason
         * a pin would not change */
        pins.fsid[0] ^= 1;
        ASSERT_OK(mounts_scan(path, &pins, &l, &u));
        ASSERT_EQ(l.n, 0);
        ASSERT_EQ(u.n, 3);
        ASSERT_STREQ(u.items[0].mount, "/");
        ASSERT_STREQ(unwatched_to_string(u.items[0].unwatched), "not given with --filesystem=");
        ASSERT_EQ(u.items[1].unwatched, UNWATCHED_READ_ONLY);
        ASSERT_EQ(u.items[2].unwatched, UNWATCHED_NOT_EXT4);
        filesystem_list_clear(&l);
        filesystem_list_clear(&u);
        filesystem_pins_clear(&pins);
        ASSERT_ERROR(filesystem_pins_make(missing, &pins, &failed), ENOENT);
        ASSERT_STREQ(failed, "/nonexistent");

        ASSERT_ERROR(mounts_scan("/nonexistent/mountinfo", NULL, &l, &u), ENOENT);
        unlink(path);
        rmdir(dir);
}

TEST(parse_fid) {
        union {
                struct fanotify_event_metadata m;
                uint8_t buf[256];
        } u = {};
        struct fanotify_event_info_fid *fid;
        struct file_handle *fh;
        uint32_t v[2] = { 1234, 77 };
        FileKey k;

        u.m.metadata_len = sizeof u.m;
        u.m.vers = FANOTIFY_METADATA_VERSION;
        u.m.mask = FAN_OPEN;
        u.m.fd = FAN_NOFD;
        fid = (void *) (u.buf + sizeof u.m);
        fid->hdr.info_type = FAN_EVENT_INFO_TYPE_FID;
        fid->hdr.len = sizeof *fid + sizeof *fh + 8;
        memset(&fid->fsid, 0xab, sizeof fid->fsid);
        fh = (void *) fid->handle;
        fh->handle_bytes = 8;
        fh->handle_type = 1;
        memcpy(fh->f_handle, v, sizeof v);
        u.m.event_len = sizeof u.m + fid->hdr.len;

        FanotifyEvent ev;
        size_t off = 0;
        ASSERT_TRUE(fanotify_event_next(u.buf, u.m.event_len, &off, &ev));
        ASSERT_EQ(off, u.m.event_len);
        ASSERT_TRUE(!fanotify_event_next(u.buf, u.m.event_len, &off, &ev));
        off = 0;
        ASSERT_TRUE(!fanotify_event_next(u.buf, u.m.event_len - 1, &off, &ev));    /* cut short */
        ASSERT_TRUE(fanotify_event_next(u.buf, u.m.event_len, &off, &ev));
        ASSERT_EQ(fanotify_event_file_key(&ev, &k), 1);
        ASSERT_EQ(k.handle_type, 1);
        ASSERT_EQ(k.handle_len, 8);
        ASSERT_TRUE(k.fsid == 0xababababababababULL);
        ASSERT_TRUE(memcmp(k.handle, v, 8) == 0);

        /* no directory and name in a FAN_REPORT_FID event */
        FileKey dk;
        const char *name = NULL;
        ASSERT_EQ(fanotify_event_dir_name(&ev, &dk, &name), 0);

        /* a record claiming more bytes than the event holds is rejected, not read past */
        fh->handle_bytes = 200;
        ASSERT_EQ(fanotify_event_file_key(&ev, &k), -EBADMSG);
        /* no info record at all (e.g. overflow event) */
        ev.meta.event_len = sizeof u.m;
        ASSERT_EQ(fanotify_event_file_key(&ev, &k), 0);

        /* two events back to back, the second 4 bytes off an 8-byte boundary, as the kernel writes them
         * with ext4's 8-byte handle (52-byte records): both read (UBSan flagged the in-place read of the
         * second one's 64-bit mask) */
        {
                _Alignas(8) char two[256];
                size_t len;
                fh->handle_bytes = 8;
                u.m.event_len = sizeof u.m + fid->hdr.len;
                len = u.m.event_len;
                ASSERT_TRUE(len % 8 == 4);
                memcpy(two, u.buf, len);
                memcpy(two + len, u.buf, len);
                off = 0;
                for (int i = 0; i < 2; i++) {
                        ASSERT_TRUE(fanotify_event_next(two, 2 * len, &off, &ev));
                        ASSERT_EQ(fanotify_event_file_key(&ev, &k), 1);
                        ASSERT_EQ(k.handle_len, 8);
                }
                ASSERT_TRUE(!fanotify_event_next(two, 2 * len, &off, &ev));
        }
}

/* FAN_REPORT_FID | FAN_REPORT_DFID_NAME: the directory's record (handle, then the name, NUL-padded) comes
 * before the file's (the parser takes them in any order); both read from the same event. */
TEST(parse_dfid_name) {
        _Alignas(8) uint8_t buf[256] = {};
        struct fanotify_event_metadata m = { .metadata_len = sizeof m, .vers = FANOTIFY_METADATA_VERSION,
                                             .mask = FAN_ACCESS, .fd = FAN_NOFD };
        struct fanotify_event_info_fid fid = {};
        struct file_handle fh = { .handle_bytes = 8, .handle_type = 1 };
        uint32_t dir_v[2] = { 2, 5 }, file_v[2] = { 1234, 77 };
        const char *name = NULL;
        size_t off = sizeof m, dlen, flen;
        FanotifyEvent ev;
        FileKey k, d;

        /* the directory's record: header, fsid, handle, "libc.so.6" and NULs to a multiple of 4 */
        dlen = sizeof fid + sizeof fh + 8 + 12;
        fid.hdr = (struct fanotify_event_info_header) { .info_type = FAN_EVENT_INFO_TYPE_DFID_NAME, .len = dlen };
        memset(&fid.fsid, 0xab, sizeof fid.fsid);
        memcpy(buf + off, &fid, sizeof fid);
        memcpy(buf + off + sizeof fid, &fh, sizeof fh);
        memcpy(buf + off + sizeof fid + sizeof fh, dir_v, 8);
        memcpy(buf + off + sizeof fid + sizeof fh + 8, "libc.so.6", 10);
        off += dlen;
        /* the file's */
        flen = sizeof fid + sizeof fh + 8;
        fid.hdr = (struct fanotify_event_info_header) { .info_type = FAN_EVENT_INFO_TYPE_FID, .len = flen };
        memcpy(buf + off, &fid, sizeof fid);
        memcpy(buf + off + sizeof fid, &fh, sizeof fh);
        memcpy(buf + off + sizeof fid + sizeof fh, file_v, 8);
        off += flen;
        m.event_len = off;
        memcpy(buf, &m, sizeof m);

        off = 0;
        ASSERT_TRUE(fanotify_event_next(buf, m.event_len, &off, &ev));
        ASSERT_EQ(fanotify_event_file_key(&ev, &k), 1);
        ASSERT_TRUE(memcmp(k.handle, file_v, 8) == 0);
        ASSERT_EQ(fanotify_event_dir_name(&ev, &d, &name), 1);
        ASSERT_TRUE(memcmp(d.handle, dir_v, 8) == 0);
        ASSERT_EQ(d.handle_len, 8);
        ASSERT_TRUE(d.fsid == 0xababababababababULL);
        ASSERT_STREQ(name, "libc.so.6");

        /* a name that runs to the record's end without its NUL is refused, not read past */
        memset(buf + sizeof m + sizeof fid + sizeof fh + 8, 'x', 12);
        ASSERT_EQ(fanotify_event_dir_name(&ev, &d, &name), -EBADMSG);
        /* so is a record with no room for a name at all */
        fid.hdr = (struct fanotify_event_info_header) { .info_type = FAN_EVENT_INFO_TYPE_DFID_NAME,
                                                        .len = sizeof fid + sizeof fh + 8 };
        memcpy(buf + sizeof m, &fid, sizeof fid.hdr);
        ev.meta.event_len = sizeof m + fid.hdr.len;
        ASSERT_EQ(fanotify_event_dir_name(&ev, &d, &name), -EBADMSG);
}

int main(void) {
        RUN(session_order_and_dedupe);
        RUN(session_where);
        RUN(session_many_files);
        RUN(session_max_files);
        RUN(session_pages);
        RUN(session_metadata);
        RUN(session_paths);
        RUN(session_page_set_in_place);
        RUN(session_range_join);
        RUN(session_range_caps);
        RUN(session_page_set_reference);
        RUN(session_many_files_pages);
        RUN(pidmap_attribution);
        RUN(pidmap_uids);
        RUN(boot_seed_from_maps);
        RUN(mountinfo);
        RUN(parse_fid);
        RUN(parse_dfid_name);
        return 0;
}
