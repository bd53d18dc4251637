/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-request cost of a block request trace with the daemon's layout model, for bench/boot.sh's breakdown of
 * boot I/O. The same filter and the same model as trace-cost.c (layout_model_requests_ms in daemon/plan/layout.c);
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
 *   cc -O2 -I common -I daemon/plan -I daemon/fs bench/boot-cost.c daemon/plan/layout.c -lm -o boot-cost   (parser: block-trace.h)
 */
#include "block-trace.h"
#include "plan/layout.h"

int main(int argc, char **argv) {
        uint64_t want_maj, want_min, device_bytes, bytes = 0;
        RqList l = {};
        double sum = 0;
        char line[4096];

        if (argc != 4 || parse_u64(argv[1], &want_maj) < 0 || parse_u64(argv[2], &want_min) < 0 ||
            parse_u64(argv[3], &device_bytes) < 0) {
                fprintf(stderr, "usage: boot-cost MAJOR MINOR DEVICE_BYTES < trace\n");
                return 2;
        }

        while (fgets(line, sizeof line, stdin)) {
                BlockRq rq;
                size_t i;
                double ms;

                if (block_rq_parse(line, &rq) < 0 || !block_rq_is_read_of(&rq, want_maj, want_min))
                        continue;
                if (rq_list_push(&l, &rq) < 0)
                        return 1;
                i = l.n - 1;
                /* the model of [previous, this] minus that of [previous]: the step this request adds */
                if (i == 0)
                        ms = layout_model_requests_ms(&l.offsets[0], &l.lengths[0], 1, device_bytes);
                else
                        ms = layout_model_requests_ms(&l.offsets[i - 1], &l.lengths[i - 1], 2, device_bytes) -
                             layout_model_requests_ms(&l.offsets[i - 1], &l.lengths[i - 1], 1, device_bytes);
                bytes += l.lengths[i];
                sum += ms;
                printf("%s %" PRIu64 " %" PRIu64 " %s %.4f %s\n", rq.ts, rq.sector, rq.nr, rq.rwbs, ms, rq.comm);
        }

        printf("total requests=%zu bytes=%" PRIu64 " modeled_ms=%.1f sum_ms=%.1f\n", l.n, bytes,
               layout_model_requests_ms(l.offsets, l.lengths, l.n, device_bytes), sum);
        rq_list_free(&l);
        return 0;
}
