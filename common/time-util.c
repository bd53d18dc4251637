/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "common/time-util.h"

/* Largest first; every style picks its unit from here. */
static const struct {
        const char *suffix;
        uint64_t usec;
} units[] = {
        { "d",   USEC_PER_DAY },
        { "h",   USEC_PER_HOUR },
        { "min", USEC_PER_MINUTE },
        { "s",   USEC_PER_SEC },
        { "ms",  USEC_PER_MSEC },
        { "us",  1 },
};

enum { UNIT_DAY, UNIT_HOUR, UNIT_MINUTE, UNIT_SEC, UNIT_MSEC, UNIT_USEC };

char *format_timespan(char *buf, size_t l, uint64_t usec, TimespanStyle style) {
        size_t i = 0;

        switch (style) {

        case TIMESPAN_TWO_UNITS:
                if (usec == 0) {
                        (void) snprintf(buf, l, "0");
                        break;
                }
                while (usec < units[i].usec)
                        i++;
                if (i >= UNIT_MSEC)
                        (void) snprintf(buf, l, "%" PRIu64 "%s", usec / units[i].usec, units[i].suffix);
                else if (i == UNIT_SEC)
                        (void) snprintf(buf, l, "%" PRIu64 ".%" PRIu64 "s",
                                        usec / USEC_PER_SEC, usec % USEC_PER_SEC / (USEC_PER_SEC / 10));
                else
                        (void) snprintf(buf, l, "%" PRIu64 "%s %" PRIu64 "%s", usec / units[i].usec,
                                        units[i].suffix, usec % units[i].usec / units[i + 1].usec,
                                        units[i + 1].suffix);
                break;

        case TIMESPAN_ONE_UNIT:
                /* days only from two on: "47 h" says more than "1 d" */
                if (usec < 2 * USEC_PER_DAY)
                        for (i = UNIT_HOUR; i < UNIT_SEC && usec < units[i].usec; i++)
                                ;
                (void) snprintf(buf, l, "%" PRIu64 " %s", usec / units[i].usec, units[i].suffix);
                break;

        case TIMESPAN_EXACT:
                if (usec == 0) {
                        (void) snprintf(buf, l, "0");
                        break;
                }
                while (usec % units[i].usec != 0)
                        i++;
                (void) snprintf(buf, l, "%" PRIu64 "%s", usec / units[i].usec, units[i].suffix);
                break;
        }
        return buf;
}
