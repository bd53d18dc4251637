/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The binary formats of tracefs that the page-cache recorder reads (doc/kernel.md §5): an event's format
 * file (which field lies where in a record), the header of a ring-buffer sub-buffer (events/header_page),
 * and the records in a sub-buffer as read from per_cpu/cpuN/trace_pipe_raw. Pure functions on text and
 * bytes: no tracefs access here. */

typedef struct TraceField {
        unsigned offset;
        unsigned size;
} TraceField;

/* From a format file: the field NAME (e.g. "i_ino", "common_pid"). -ENOENT if absent, -EBADMSG if the
 * line cannot be parsed. */
int trace_format_field(const char *format, const char *name, TraceField *ret);
/* From a format file: the event's "ID:". */
int trace_format_id(const char *format, unsigned *ret);
/* Reads an unsigned field of 1, 2, 4 or 8 bytes (native byte order) from a record of `size` bytes; 0 if it
 * does not fit. */
uint64_t trace_field_get(const TraceField *f, const uint8_t *record, size_t size);

/* Where a sub-buffer keeps its timestamp, its commit word (bytes of data, and the flags saying events
 * were lost before it) and its data. */
typedef struct TracePageLayout {
        TraceField timestamp;
        TraceField commit;
        unsigned data_offset;
} TracePageLayout;

int trace_page_layout_parse(const char *header_page, TracePageLayout *ret);

typedef struct TraceRecord {
        uint64_t timestamp;     /* of the instance's trace_clock */
        const uint8_t *data;    /* the event: common_type first, then the fields of its format file */
        size_t size;
} TraceRecord;

/* Events lost before a page when the kernel could not say how many. */
#define TRACE_MISSED_UNKNOWN UINT64_MAX

/* Walks one sub-buffer (n bytes read from trace_pipe_raw) and calls cb for each event in it, in the order
 * the kernel wrote them, with its absolute timestamp. *ret_missed: events the kernel dropped before this
 * page (0, a count, or TRACE_MISSED_UNKNOWN). cb returns < 0 to stop (that value is returned). Returns the
 * number of events, or -EBADMSG for a page that does not parse. */
int trace_page_parse(const TracePageLayout *l, const void *page, size_t n,
                     int (*cb)(const TraceRecord *r, void *userdata), void *userdata, uint64_t *ret_missed);
