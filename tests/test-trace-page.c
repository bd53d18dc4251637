/* SPDX-License-Identifier: GPL-2.0-or-later */
/* trace-page.c on hand-made input: format files as 6.18 writes them, and ring-buffer sub-buffers holding
 * every record type (short and long events, padding, time extensions, absolute timestamps), the
 * missed-events flags, and malformed pages, which must be refused rather than read past their end.
 * tests/test-pagecache.c runs the same code on what the kernel writes. */
#include <stdbool.h>
#include <stdint.h>

#include "common/macro.h"
#include "test-util.h"
#include "record/trace-page.h"

static const char header_page[] =
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
        "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
        "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char format[] =
        "name: mm_filemap_add_to_page_cache\n"
        "ID: 600\n"
        "format:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
        "\n"
        "\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long i_ino;\toffset:16;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long index;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;\n"
        "\tfield:unsigned char order;\toffset:36;\tsize:1;\tsigned:0;\n"
        "\n"
        "print fmt: \"dev %d:%d ino %lx\", REC->s_dev, REC->i_ino\n";

TEST(formats) {
        TracePageLayout l;
        TraceField f;
        unsigned id;

        ASSERT_OK(trace_page_layout_parse(header_page, &l));
        ASSERT_EQ(l.timestamp.offset, 0);
        ASSERT_EQ(l.commit.offset, 8);
        ASSERT_EQ(l.commit.size, 8);
        ASSERT_EQ(l.data_offset, 16);
        ASSERT_OK(trace_format_id(format, &id));
        ASSERT_EQ(id, 600);
        ASSERT_OK(trace_format_field(format, "index", &f));   /* not "last_index", not "common_..." */
        ASSERT_EQ(f.offset, 24);
        ASSERT_EQ(f.size, 8);
        ASSERT_OK(trace_format_field(format, "s_dev", &f));
        ASSERT_EQ(f.offset, 32);
        ASSERT_EQ(f.size, 4);
        ASSERT_OK(trace_format_field(format, "common_pid", &f));
        ASSERT_EQ(f.offset, 4);
        ASSERT_ERROR(trace_format_field(format, "pid", &f), ENOENT);
        ASSERT_ERROR(trace_format_field(format, "ino", &f), ENOENT);
        ASSERT_ERROR(trace_format_id("name: x\n", &id), ENOENT);
        ASSERT_ERROR(trace_page_layout_parse("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n", &l),
                     ENOENT);
}

/* A sub-buffer under construction. */
typedef struct Page {
        uint8_t b[4096];
        size_t n;       /* bytes of data after the 16-byte header */
} Page;

static void put32(Page *p, uint32_t v) {
        memcpy(p->b + 16 + p->n, &v, 4);
        p->n += 4;
}

static void header(Page *p, unsigned type_len, uint32_t delta) {
        put32(p, (delta << 5) | type_len);
}

/* An event of `words` 32-bit words whose first word is `tag`, as a short record (type_len = words) or a
 * long one (type_len 0, length word). */
static void event(Page *p, uint32_t delta, unsigned words, uint32_t tag, bool lng) {
        if (lng) {
                header(p, 0, delta);
                put32(p, words * 4 + 4);
        } else
                header(p, words, delta);
        put32(p, tag);
        for (unsigned i = 1; i < words; i++)
                put32(p, 0xdddddddd);
}

static void finish(Page *p, uint64_t ts, uint64_t flags) {
        uint64_t commit = p->n | flags;

        memcpy(p->b, &ts, 8);
        memcpy(p->b + 8, &commit, 8);
}

typedef struct Got {
        uint64_t ts[16];
        uint32_t tag[16];
        size_t size[16];
        int n;
} Got;

static int collect(const TraceRecord *r, void *userdata) {
        Got *g = userdata;
        uint32_t tag;

        ASSERT_TRUE(g->n < 16 && r->size >= 4);
        memcpy(&tag, r->data, 4);
        g->ts[g->n] = r->timestamp;
        g->tag[g->n] = tag;
        g->size[g->n] = r->size;
        g->n++;
        return 0;
}

static int stop_at_second(const TraceRecord *r, void *userdata) {
        return ++*(int *) userdata == 2 ? -ECANCELED : 0;
}

TEST(records) {
        TracePageLayout l;
        Page p = {};
        Got g = {};
        uint64_t missed, base = UINT64_C(1) << 40;
        int stopped = 0;

        ASSERT_OK(trace_page_layout_parse(header_page, &l));
        event(&p, 5, 10, 1, false);                     /* base + 5 */
        event(&p, 7, 10, 2, true);                      /* base + 12, long form */
        header(&p, 29, 3);                              /* discarded record: its delta does not count */
        put32(&p, 12);
        put32(&p, 0);
        put32(&p, 0);
        header(&p, 30, 1);                              /* time extension: 2^27 * 2 + 1 */
        put32(&p, 2);
        event(&p, 0, 2, 3, false);                      /* base + 12 + 2^28 + 1 */
        header(&p, 31, 9);                              /* absolute: (5 << 27) | 9, top bits from base */
        put32(&p, 5);
        event(&p, 4, 1, 4, false);
        header(&p, 29, 0);                              /* the rest is empty */
        put32(&p, 0xffffffff);
        finish(&p, base, 0);

        ASSERT_EQ(trace_page_parse(&l, p.b, sizeof p.b, collect, &g, &missed), 4);
        ASSERT_EQ(missed, 0);
        ASSERT_EQ(g.tag[0], 1);
        ASSERT_EQ(g.ts[0], base + 5);
        ASSERT_EQ(g.size[0], 40);
        ASSERT_EQ(g.tag[1], 2);
        ASSERT_EQ(g.ts[1], base + 12);
        ASSERT_EQ(g.size[1], 40);
        ASSERT_EQ(g.tag[2], 3);
        ASSERT_EQ(g.ts[2], base + 12 + (UINT64_C(2) << 27) + 1);
        ASSERT_EQ(g.tag[3], 4);
        ASSERT_EQ(g.ts[3], ((UINT64_C(5) << 27) | 9) + 4);
        ASSERT_EQ(trace_page_parse(&l, p.b, sizeof p.b, stop_at_second, &stopped, &missed), -ECANCELED);
        ASSERT_EQ(stopped, 2);

        /* events lost before the page: counted, or only flagged */
        memset(&p, 0, sizeof p);
        event(&p, 1, 10, 7, false);
        memcpy(p.b + 16 + p.n, &(uint64_t) { 1234 }, 8);
        finish(&p, 0, (UINT64_C(1) << 31) | (UINT64_C(1) << 30));
        ASSERT_EQ(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), 1);
        ASSERT_EQ(missed, 1234);
        finish(&p, 0, UINT64_C(1) << 31);
        ASSERT_EQ(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), 1);
        ASSERT_EQ(missed, TRACE_MISSED_UNKNOWN);

        /* a partial page as read from trace_pipe_raw: only the committed bytes count */
        ASSERT_EQ(trace_page_parse(&l, p.b, 16 + p.n, NULL, NULL, &missed), 1);
}

TEST(malformed) {
        TracePageLayout l;
        Page p = {};
        uint64_t missed;

        ASSERT_OK(trace_page_layout_parse(header_page, &l));
        ASSERT_ERROR(trace_page_parse(&l, p.b, 8, NULL, NULL, &missed), EBADMSG);      /* no header */
        finish(&p, 0, 5000);                                                    /* commit past the page */
        ASSERT_ERROR(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), EBADMSG);
        event(&p, 1, 28, 1, false);                     /* 116 bytes committed ... */
        finish(&p, 0, 0);
        ASSERT_ERROR(trace_page_parse(&l, p.b, 16 + 60, NULL, NULL, &missed), EBADMSG);  /* ... 60 read */
        memset(&p, 0, sizeof p);
        header(&p, 0, 1);                               /* long record longer than the data */
        put32(&p, 4000);
        finish(&p, 0, 0);
        ASSERT_ERROR(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), EBADMSG);
        memset(&p, 0, sizeof p);
        header(&p, 0, 1);                               /* long record shorter than its length word */
        put32(&p, 2);
        finish(&p, 0, 0);
        ASSERT_ERROR(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), EBADMSG);
        memset(&p, 0, sizeof p);
        header(&p, 30, 1);                              /* time extension cut off */
        finish(&p, 0, 0);
        ASSERT_ERROR(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), EBADMSG);
        memset(&p, 0, sizeof p);
        header(&p, 29, 1);                              /* padding running past the data */
        put32(&p, 100);
        finish(&p, 0, 0);
        ASSERT_ERROR(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), EBADMSG);
        memset(&p, 0, sizeof p);                        /* empty: fine */
        finish(&p, 0, 0);
        ASSERT_EQ(trace_page_parse(&l, p.b, sizeof p.b, NULL, NULL, &missed), 0);
}

TEST(fields) {
        TraceField f8 = { 8, 8 }, f4 = { 4, 4 }, f1 = { 2, 1 }, past = { 14, 4 }, odd = { 0, 3 };
        uint8_t rec[16];

        for (unsigned i = 0; i < sizeof rec; i++)
                rec[i] = (uint8_t) (i + 1);
        ASSERT_EQ(trace_field_get(&f1, rec, sizeof rec), 3);
        ASSERT_EQ(trace_field_get(&f4, rec, sizeof rec), 0x08070605);
        ASSERT_TRUE(trace_field_get(&f8, rec, sizeof rec) == UINT64_C(0x100f0e0d0c0b0a09));
        ASSERT_EQ(trace_field_get(&past, rec, sizeof rec), 0);
        ASSERT_EQ(trace_field_get(&odd, rec, sizeof rec), 0);
}

int main(void) {
        RUN(formats);
        RUN(records);
        RUN(malformed);
        RUN(fields);
        return 0;
}
