/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cost of a real block request trace with the daemon's layout model (layout_model_requests_ms in
 * daemon/plan/layout.c). See bench/README.md.
 *
 *   trace-cost MAJOR MINOR DEVICE_BYTES < trace
 *
 * Reads tracefs text lines of the block:block_rq_issue event, e.g.
 *   open-files-812 [001] ..... 95.123456: block_rq_issue: 7,3 RA 131072 () 1052672 + 256 none,0,0 [open-files]
 * keeps the ones of device MAJOR,MINOR whose rwbs contains 'R' (reads, read-ahead included), in trace order,
 * and prints one JSON object on one line
 *   {"requests":..,"bytes":..,"modeled_ms":..,"skipped_other":..,"unparsed":..}
 * (sectors are 512 bytes; skipped_other counts events of other devices or non-read requests, unparsed lines
 * that mention block_rq_issue but could not be parsed). Lines of other events are ignored.
 *
 *   cc -O2 -I common -I daemon/plan -I daemon/fs bench/trace-cost.c daemon/plan/layout.c -lm -o trace-cost   (parser: block-trace.h)
 */
#include "block-trace.h"
#include "plan/layout.h"

int main(int argc, char **argv) {
        uint64_t want_maj, want_min, device_bytes, bytes = 0, skipped = 0, unparsed = 0;
        RqList l = {};
        char line[4096];

        if (argc != 4 || parse_u64(argv[1], &want_maj) < 0 || parse_u64(argv[2], &want_min) < 0 ||
            parse_u64(argv[3], &device_bytes) < 0) {
                fprintf(stderr, "usage: trace-cost MAJOR MINOR DEVICE_BYTES < trace\n");
                return 2;
        }

        while (fgets(line, sizeof line, stdin)) {
                BlockRq rq;
                int r;

                r = block_rq_parse(line, &rq);
                if (r == -1)
                        continue;
                if (r < 0) {
                        unparsed++;
                        continue;
                }
                if (!block_rq_is_read_of(&rq, want_maj, want_min)) {
                        skipped++;
                        continue;
                }
                if (rq_list_push(&l, &rq) < 0)
                        return 1;
                bytes += rq.nr * 512;
        }

        printf("{\"requests\":%zu,\"bytes\":%" PRIu64 ",\"modeled_ms\":%.1f,\"skipped_other\":%" PRIu64
               ",\"unparsed\":%" PRIu64 "}\n",
               l.n, bytes, layout_model_requests_ms(l.offsets, l.lengths, l.n, device_bytes), skipped, unparsed);
        rq_list_free(&l);
        return 0;
}
