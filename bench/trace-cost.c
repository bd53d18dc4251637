/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cost of a real block request trace with the daemon's layout model (layout_model_requests_ms in
 * daemon/layout.c). See bench/README.md.
 *
 *   trace-cost MAJOR MINOR DEVICE_BYTES < trace
 *
 * Reads tracefs text lines of the block:block_rq_issue event, e.g.
 *   open-files-812 [001] ..... 95.123456: block_rq_issue: 7,3 RA 131072 () 1052672 + 256 none,0,0 [open-files]
 * keeps the ones of device MAJOR,MINOR whose rwbs contains 'R' (reads, read-ahead included), in trace order,
 * and prints
 *   requests=.. bytes=.. modeled_ms=.. skipped_other=.. unparsed=..
 * (sectors are 512 bytes; skipped_other counts events of other devices or non-read requests, unparsed lines
 * that mention block_rq_issue but could not be parsed). Lines of other events are ignored.
 *
 *   cc -O2 -I common -I daemon bench/trace-cost.c daemon/layout.c -lm -o trace-cost
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

/* One event line: fill dev, rwbs, sector, nr. 0 = parsed, -1 = not this event, -2 = malformed. */
static int parse_line(const char *line, unsigned *maj, unsigned *min, char rwbs[16], uint64_t *sector, uint64_t *nr) {
        const char *p, *q;
        unsigned long long s;
        unsigned n, bytes;

        p = strstr(line, "block_rq_issue: ");
        if (!p)
                return -1;
        p += strlen("block_rq_issue: ");
        if (sscanf(p, "%u,%u %15s %u", maj, min, rwbs, &bytes) != 4)
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
        *sector = s;
        *nr = n;
        return 0;
}

int main(int argc, char **argv) {
        uint64_t want_maj, want_min, device_bytes, bytes = 0;
        uint64_t *offsets = NULL, *lengths = NULL, skipped = 0, unparsed = 0;
        size_t n = 0, allocated = 0;
        char line[4096];

        if (argc != 4 || parse_u64(argv[1], &want_maj) < 0 || parse_u64(argv[2], &want_min) < 0 ||
            parse_u64(argv[3], &device_bytes) < 0) {
                fprintf(stderr, "usage: trace-cost MAJOR MINOR DEVICE_BYTES < trace\n");
                return 2;
        }

        while (fgets(line, sizeof line, stdin)) {
                unsigned maj, min;
                char rwbs[16];
                uint64_t sector, nr;
                int r;

                r = parse_line(line, &maj, &min, rwbs, &sector, &nr);
                if (r == -1)
                        continue;
                if (r < 0) {
                        unparsed++;
                        continue;
                }
                if (maj != want_maj || min != want_min || !strchr(rwbs, 'R') || nr == 0) {
                        skipped++;
                        continue;
                }
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
                bytes += nr * 512;
                n++;
        }

        printf("requests=%zu bytes=%" PRIu64 " modeled_ms=%.1f skipped_other=%" PRIu64 " unparsed=%" PRIu64 "\n",
               n, bytes, layout_model_requests_ms(offsets, lengths, n, device_bytes), skipped, unparsed);
        free(offsets);
        free(lengths);
        return 0;
}
