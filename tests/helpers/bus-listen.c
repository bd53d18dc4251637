/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: receive the signals of seeklessd's object on the system bus ($DBUS_SYSTEM_BUS_ADDRESS) as
 * an ordinary subscriber would (a match rule, no eavesdropping), and print each on one line: the member,
 * then every value it carries (strings as received), separated by spaces.
 *   bus-listen SECONDS [INTERFACE]      (default org.seekless.Seekless1.Manager; e.g.
 *                                        org.freedesktop.DBus.Properties for PropertiesChanged)
 * Prints "ready" once subscribed; exits 0 after SECONDS, 1 if it could not subscribe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <systemd/sd-bus.h>

static int print_values(sd_bus_message *m) {
        for (;;) {
                const char *contents;
                char type;
                int r;

                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r <= 0)
                        return r;
                if (type == SD_BUS_TYPE_ARRAY || type == SD_BUS_TYPE_STRUCT || type == SD_BUS_TYPE_VARIANT ||
                    type == SD_BUS_TYPE_DICT_ENTRY) {
                        r = sd_bus_message_enter_container(m, type, contents);
                        if (r < 0)
                                return r;
                        r = print_values(m);
                        if (r < 0)
                                return r;
                        r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (type == SD_BUS_TYPE_STRING || type == SD_BUS_TYPE_OBJECT_PATH || type == SD_BUS_TYPE_SIGNATURE) {
                        const char *s;
                        r = sd_bus_message_read_basic(m, type, &s);
                        if (r < 0)
                                return r;
                        printf(" %s", s);
                } else {
                        union { uint8_t y; int b; int16_t n; uint16_t q; int32_t i; uint32_t u; int64_t x;
                                uint64_t t; double d; int h; } v;
                        r = sd_bus_message_read_basic(m, type, &v);
                        if (r < 0)
                                return r;
                        if (type == SD_BUS_TYPE_UINT64)
                                printf(" %llu", (unsigned long long) v.t);
                        else if (type == SD_BUS_TYPE_UINT32)
                                printf(" %u", v.u);
                        else
                                printf(" (%c)", type);
                }
        }
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        printf("%s", sd_bus_message_get_member(m));
        (void) print_values(m);
        printf("\n");
        fflush(stdout);
        return 0;
}

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        struct timespec ts;
        double end;
        int r;

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: bus-listen SECONDS [INTERFACE]\n");
                return 2;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        end = (double) ts.tv_sec + atof(argv[1]);
        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, NULL, "/org/seekless/Seekless1",
                                        argc > 2 ? argv[2] : "org.seekless.Seekless1.Manager", NULL, on_signal, NULL);
        if (r < 0) {
                fprintf(stderr, "bus-listen: cannot subscribe: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((double) ts.tv_sec >= end)
                        break;
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return 1;
                if (r == 0)
                        (void) sd_bus_wait(bus, 200000);
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
