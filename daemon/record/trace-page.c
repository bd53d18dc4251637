/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "record/trace-page.h"

/* A format file has one line per field:
 *         field:unsigned long i_ino;	offset:16;	size:8;	signed:0;
 * The name is the last word before ';' (an array would end in "[N]": not used by our events). */
int trace_format_field(const char *format, const char *name, TraceField *ret) {
        size_t l = strlen(name);

        for (const char *p = format; (p = strstr(p, "field:")); p++) {
                const char *semi = strchr(p, ';'), *nl = strchr(p, '\n');
                unsigned offset, size;

                if (!semi || (nl && nl < semi))
                        continue;
                if ((size_t) (semi - p) < l + 1 || memcmp(semi - l, name, l) != 0 ||
                    (semi[-(long) l - 1] != ' ' && semi[-(long) l - 1] != '\t' && semi[-(long) l - 1] != '*'))
                        continue;
                if (sscanf(semi + 1, " offset:%u; size:%u;", &offset, &size) != 2)
                        return -EBADMSG;
                *ret = (TraceField) { .offset = offset, .size = size };
                return 0;
        }
        return -ENOENT;
}

int trace_format_id(const char *format, unsigned *ret) {
        const char *p = strstr(format, "\nID:");
        unsigned id;

        if (!p && startswith(format, "ID:"))
                p = format - 1;
        if (!p || sscanf(p + 4, " %u", &id) != 1)
                return -ENOENT;
        *ret = id;
        return 0;
}

uint64_t trace_field_get(const TraceField *f, const uint8_t *record, size_t size) {
        if (f->offset > size || f->size > size - f->offset)
                return 0;
        switch (f->size) {
        case 1:
                return record[f->offset];
        case 2: {
                uint16_t v;
                memcpy(&v, record + f->offset, 2);
                return v;
        }
        case 4: {
                uint32_t v;
                memcpy(&v, record + f->offset, 4);
                return v;
        }
        case 8: {
                uint64_t v;
                memcpy(&v, record + f->offset, 8);
                return v;
        }
        default:
                return 0;
        }
}

/* events/header_page:
 *         field: u64 timestamp;	offset:0;	size:8;	signed:0;
 *         field: local_t commit;	offset:8;	size:8;	signed:1;
 *         field: int overwrite;	offset:8;	size:1;	signed:1;
 *         field: char data;	offset:16;	size:4080;	signed:0; */
int trace_page_layout_parse(const char *header_page, TracePageLayout *ret) {
        TracePageLayout l;
        TraceField data;
        int r;

        r = trace_format_field(header_page, "timestamp", &l.timestamp);
        if (r < 0)
                return r;
        r = trace_format_field(header_page, "commit", &l.commit);
        if (r < 0)
                return r;
        r = trace_format_field(header_page, "data", &data);
        if (r < 0)
                return r;
        if (l.timestamp.size != 8 || (l.commit.size != 4 && l.commit.size != 8) ||
            data.offset < l.commit.offset + l.commit.size)
                return -EBADMSG;
        l.data_offset = data.offset;
        *ret = l;
        return 0;
}

/* A record's header (doc/kernel.md §5): 32 bits, type_len in the low 5, time_delta in the high 27.
 * type_len 1..28: a data record of type_len * 4 bytes; 0: a data record whose length (plus 4) is in the next
 * 32 bits; 29: padding (time_delta 0: the rest of the page is empty); 30: a time extension (the next 32 bits
 * are bits 27..58 of a delta); 31: an absolute timestamp (same encoding; its top bits, 59 and up, are the
 * current time's). The commit word's bit 31 says events were lost before this page, bit 30 that their count
 * follows the data. */
#define TYPE_PADDING 29
#define TYPE_TIME_EXTEND 30
#define TYPE_TIME_STAMP 31
#define MISSED_EVENTS (UINT64_C(1) << 31)
#define MISSED_STORED (UINT64_C(1) << 30)
#define COMMIT_SIZE_MASK ((UINT64_C(1) << 30) - 1)
#define TS_MSB (UINT64_C(0xf) << 59)

int trace_page_parse(const TracePageLayout *l, const void *page, size_t n,
                     int (*cb)(const TraceRecord *r, void *userdata), void *userdata, uint64_t *ret_missed) {
        const uint8_t *base = page, *p, *end;
        uint64_t ts, commit, size;
        int count = 0;

        if (n < l->data_offset)
                return -EBADMSG;
        ts = trace_field_get(&l->timestamp, base, n);
        commit = trace_field_get(&l->commit, base, n);
        size = commit & COMMIT_SIZE_MASK;
        if (size > n - l->data_offset)
                return -EBADMSG;
        *ret_missed = 0;
        if (commit & MISSED_EVENTS) {
                uint64_t missed = TRACE_MISSED_UNKNOWN;

                if ((commit & MISSED_STORED) && size + 8 <= n - l->data_offset)
                        memcpy(&missed, base + l->data_offset + size, 8);
                *ret_missed = missed;
        }

        p = base + l->data_offset;
        end = p + size;
        while (end - p >= 4) {
                uint32_t h, ext;
                unsigned type_len, delta;
                TraceRecord rec;

                memcpy(&h, p, 4);
                type_len = h & 31;
                delta = h >> 5;
                switch (type_len) {
                case TYPE_PADDING:
                        if (delta == 0)
                                return count;   /* the rest of the page is unused */
                        if (end - p < 8)
                                return -EBADMSG;
                        memcpy(&ext, p + 4, 4);
                        if (ext > (size_t) (end - p) - 4)
                                return -EBADMSG;
                        p += 4 + ext;           /* a discarded record: its delta does not count */
                        continue;
                case TYPE_TIME_EXTEND:
                case TYPE_TIME_STAMP:
                        if (end - p < 8)
                                return -EBADMSG;
                        memcpy(&ext, p + 4, 4);
                        if (type_len == TYPE_TIME_EXTEND)
                                ts += ((uint64_t) ext << 27) | delta;
                        else
                                ts = (((uint64_t) ext << 27) | delta) | (ts & TS_MSB);
                        p += 8;
                        continue;
                case 0:
                        if (end - p < 8)
                                return -EBADMSG;
                        memcpy(&ext, p + 4, 4);
                        if (ext < 4 || ext > (size_t) (end - p) - 4)
                                return -EBADMSG;
                        rec.data = p + 8;
                        rec.size = ext - 4;
                        p += 4 + ext;
                        break;
                default:
                        if ((size_t) (end - p) < 4 + type_len * 4u)
                                return -EBADMSG;
                        rec.data = p + 4;
                        rec.size = type_len * 4u;
                        p += 4 + type_len * 4u;
                        break;
                }
                ts += delta;
                rec.timestamp = ts;
                count++;
                if (cb) {
                        int r = cb(&rec, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return count;
}
