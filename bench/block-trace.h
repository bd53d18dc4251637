/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What bench/trace-cost.c and bench/boot-cost.c share: reading tracefs text lines of the
 * block:block_rq_issue event, e.g.
 *   open-files-812 [001] ..... 95.123456: block_rq_issue: 7,3 RA 131072 () 1052672 + 256 none,0,0 [open-files]
 * and collecting the kept requests as byte offsets and lengths for layout_model_requests_ms(). Header-only:
 * each benchmark is one .c file compiled by its script. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"

static inline int parse_u64(const char *s, uint64_t *ret) {
        char *end;

        errno = 0;
        *ret = strtoull(s, &end, 10);
        return (errno || *end || end == s) ? -EINVAL : 0;
}

typedef struct BlockRq {
        unsigned maj, min;
        char rwbs[16];
        uint64_t sector, nr;    /* 512-byte sectors */
        char comm[64];          /* the trailing "[comm]", blanks made '_'; "?" if none */
        char ts[32];            /* the timestamp in front of the event name; "-" if none */
} BlockRq;

/* One line: 0 = parsed, -1 = not this event, -2 = malformed. */
static inline int block_rq_parse(const char *line, BlockRq *rq) {
        const char *p, *q, *c, *e, *t;
        unsigned long long s;
        unsigned n, bytes;
        size_t len;

        p = strstr(line, "block_rq_issue: ");
        if (!p)
                return -1;
        strcpy(rq->ts, "-");
        if (p - line >= 3 && p[-1] == ' ' && p[-2] == ':') {
                t = p - 2;
                while (t > line && ((t[-1] >= '0' && t[-1] <= '9') || t[-1] == '.'))
                        t--;
                len = (size_t) (p - 2 - t);
                if (len > 0 && len < sizeof rq->ts) {
                        memcpy(rq->ts, t, len);
                        rq->ts[len] = 0;
                }
        }
        p += strlen("block_rq_issue: ");
        if (sscanf(p, "%u,%u %15s %u", &rq->maj, &rq->min, rq->rwbs, &bytes) != 4)
                return -2;
        /* then " (CMD) SECTOR + NR ...": CMD is empty for file system requests, skip to its closing ')' */
        q = strchr(p, '(');
        if (!q)
                return -2;
        q = strchr(q, ')');
        if (!q)
                return -2;
        if (sscanf(q + 1, " %llu + %u", &s, &n) != 2)
                return -2;
        rq->sector = s;
        rq->nr = n;
        strcpy(rq->comm, "?");
        c = strrchr(q, '[');
        e = c ? strchr(c, ']') : NULL;
        if (c && e && e > c + 1) {
                len = MIN((size_t) (e - c - 1), sizeof rq->comm - 1);
                memcpy(rq->comm, c + 1, len);
                rq->comm[len] = 0;
                for (char *x = rq->comm; *x; x++)
                        if (*x == ' ' || *x == '\t')
                                *x = '_';
        }
        return 0;
}

/* A read of device maj,min (rwbs contains 'R': reads, read-ahead, metadata reads) of at least one sector. */
static inline int block_rq_is_read_of(const BlockRq *rq, uint64_t maj, uint64_t min) {
        return rq->maj == maj && rq->min == min && strchr(rq->rwbs, 'R') && rq->nr > 0;
}

/* The kept requests, in trace order, in bytes. */
typedef struct RqList {
        uint64_t *offsets, *lengths;
        size_t n, allocated;
} RqList;

static inline int rq_list_push(RqList *l, const BlockRq *rq) {
        if (l->n == l->allocated) {
                size_t want = l->allocated ? l->allocated * 2 : 1024;
                uint64_t *no, *nl;

                no = realloc(l->offsets, want * sizeof *l->offsets);
                if (!no)
                        return -ENOMEM;
                l->offsets = no;
                nl = realloc(l->lengths, want * sizeof *l->lengths);
                if (!nl)
                        return -ENOMEM;
                l->lengths = nl;
                l->allocated = want;
        }
        l->offsets[l->n] = rq->sector * 512;
        l->lengths[l->n] = rq->nr * 512;
        l->n++;
        return 0;
}

static inline void rq_list_free(RqList *l) {
        free(l->offsets);
        free(l->lengths);
        *l = (RqList) {};
}
