/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-request cost of a block request trace with the daemon's layout model, for bench/boot.sh's breakdown of
 * boot I/O. The same filter and the same model as trace-cost.c (layout_model_requests_ms in daemon/layout.c);
 * what it adds is how the total splits over the requests, so that a caller can sum it by what was read.
 *
 *   boot-cost MAJOR MINOR DEVICE_BYTES < trace
 *
 * Reads tracefs text lines of the block:block_rq_issue event, keeps the reads of device MAJOR,MINOR (rwbs
 * contains 'R'), in trace order, and prints one line per kept request:
 *   TIMESTAMP SECTOR NR_SECTORS RWBS MS COMM
 * (TIMESTAMP as in the trace, seconds; "-" if the line has none)
 * where MS is what this request adds to the model's total: the model of the requests [previous, this] minus
 * the model of [previous] (the model is a sum of steps, each depending only on the previous request), and
 * for the first request the model of [first]. A last line
 *   total requests=.. bytes=.. modeled_ms=.. sum_ms=..
 * gives the model over the whole sequence (what trace-cost prints) and the sum of the per-request figures;
 * the two agree up to rounding.
 *
 *   cc -O2 -I common -I daemon bench/boot-cost.c daemon/layout.c -lm -o boot-cost
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;

        errno = 0;
        *ret = strtoull(s, &end, 10);
        return (errno || *end || end == s) ? -EINVAL : 0;
}

/* As trace-cost.c: 0 = parsed, -1 = not this event, -2 = malformed. comm = the trailing "[comm]", ts = the
 * timestamp in front of the event name ("... 95.123456: block_rq_issue: ..."). */
static int parse_line(const char *line, unsigned *maj, unsigned *min, char rwbs[16], uint64_t *sector, uint64_t *nr,
                      char comm[64], char ts[32]) {
        const char *p, *q, *c, *e, *t;
        unsigned long long s;
        unsigned n, bytes;
        size_t len;

        p = strstr(line, "block_rq_issue: ");
        if (!p)
                return -1;
        strcpy(ts, "-");
        if (p - line >= 3 && p[-1] == ' ' && p[-2] == ':') {
                t = p - 2;
                while (t > line && ((t[-1] >= '0' && t[-1] <= '9') || t[-1] == '.'))
                        t--;
                len = (size_t) (p - 2 - t);
                if (len > 0 && len < 32) {
                        memcpy(ts, t, len);
                        ts[len] = 0;
                }
        }
        p += strlen("block_rq_issue: ");
        if (sscanf(p, "%u,%u %15s %u", maj, min, rwbs, &bytes) != 4)
                return -2;
        q = strchr(p, '(');
        if (!q)
                return -2;
        q = strchr(q, ')');
        if (!q)
                return -2;
        if (sscanf(q + 1, " %llu + %u", &s, &n) != 2)
                return -2;
        *sector = s;
        *nr = n;
        strcpy(comm, "?");
        c = strrchr(q, '[');
        e = c ? strchr(c, ']') : NULL;
        if (c && e && e > c + 1) {
                len = (size_t) (e - c - 1);
                if (len > 63)
                        len = 63;
                memcpy(comm, c + 1, len);
                comm[len] = 0;
                for (char *x = comm; *x; x++)
                        if (*x == ' ' || *x == '\t')
                                *x = '_';
        }
        return 0;
}

int main(int argc, char **argv) {
        uint64_t want_maj, want_min, device_bytes, bytes = 0, prev_off = 0, prev_len = 0;
        uint64_t *offsets = NULL, *lengths = NULL;
        size_t n = 0, allocated = 0;
        double sum = 0;
        char line[4096];

        if (argc != 4 || parse_u64(argv[1], &want_maj) < 0 || parse_u64(argv[2], &want_min) < 0 ||
            parse_u64(argv[3], &device_bytes) < 0) {
                fprintf(stderr, "usage: boot-cost MAJOR MINOR DEVICE_BYTES < trace\n");
                return 2;
        }

        while (fgets(line, sizeof line, stdin)) {
                unsigned maj, min;
                char rwbs[16], comm[64], ts[32];
                uint64_t sector, nr, o[2], l[2];
                double ms;

                if (parse_line(line, &maj, &min, rwbs, &sector, &nr, comm, ts) < 0)
                        continue;
                if (maj != want_maj || min != want_min || !strchr(rwbs, 'R') || nr == 0)
                        continue;
                if (n == allocated) {
                        size_t want = allocated ? allocated * 2 : 1024;
                        uint64_t *no, *nl;

                        no = realloc(offsets, want * sizeof *offsets);
                        if (!no)
                                return 1;
                        offsets = no;
                        nl = realloc(lengths, want * sizeof *lengths);
                        if (!nl)
                                return 1;
                        lengths = nl;
                        allocated = want;
                }
                offsets[n] = sector * 512;
                lengths[n] = nr * 512;
                if (n == 0)
                        ms = layout_model_requests_ms(&offsets[0], &lengths[0], 1, device_bytes);
                else {
                        o[0] = prev_off, l[0] = prev_len, o[1] = offsets[n], l[1] = lengths[n];
                        ms = layout_model_requests_ms(o, l, 2, device_bytes) -
                             layout_model_requests_ms(o, l, 1, device_bytes);
                }
                prev_off = offsets[n], prev_len = lengths[n];
                bytes += lengths[n];
                sum += ms;
                n++;
                printf("%s %" PRIu64 " %" PRIu64 " %s %.4f %s\n", ts, sector, nr, rwbs, ms, comm);
        }

        printf("total requests=%zu bytes=%" PRIu64 " modeled_ms=%.1f sum_ms=%.1f\n", n, bytes,
               layout_model_requests_ms(offsets, lengths, n, device_bytes), sum);
        free(offsets);
        free(lengths);
        return 0;
}
