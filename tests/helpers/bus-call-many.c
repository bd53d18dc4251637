/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test program: call a method of org.seekless.Seekless1.Manager that takes one "as" with N copies of a
 * string (a message busctl's command line cannot carry), on the system bus ($DBUS_SYSTEM_BUS_ADDRESS).
 *   bus-call-many METHOD N [STRING]      (STRING defaults to "/")
 * Prints "<error name or ok> <seconds the call took>" and exits 0 once an answer came back; 1 if none came
 * within 30 s or the call could not be made. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <systemd/sd-bus.h>

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        const char *s = argc > 3 ? argv[3] : "/";
        sd_bus *bus = NULL;
        long n;
        double t;
        int r;

        if (argc < 3 || (n = strtol(argv[2], NULL, 10)) < 0) {
                fprintf(stderr, "usage: bus-call-many METHOD N [STRING]\n");
                return 2;
        }
        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_message_new_method_call(bus, &m, "org.seekless.Seekless1", "/org/seekless/Seekless1",
                                                   "org.seekless.Seekless1.Manager", argv[1]);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "s");
        for (long i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append_basic(m, 's', s);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0) {
                fprintf(stderr, "bus-call-many: cannot make the call: %s\n", strerror(-r));
                sd_bus_message_unref(m);
                sd_bus_flush_close_unref(bus);
                return 1;
        }
        t = now();
        r = sd_bus_call(bus, m, 30 * 1000000ULL, &error, &reply);
        t = now() - t;
        if (r < 0 && (!sd_bus_error_is_set(&error) || sd_bus_error_has_name(&error, SD_BUS_ERROR_TIMEOUT) ||
                      sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY))) {
                fprintf(stderr, "bus-call-many: no answer after %.1f s: %s\n", t, error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                sd_bus_message_unref(m);
                sd_bus_flush_close_unref(bus);
                return 1;
        }
        printf("%s %.3f\n", r < 0 ? error.name : "ok", t);
        if (r < 0 && error.message)
                fprintf(stderr, "%s\n", error.message);
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
        sd_bus_flush_close_unref(bus);
        return 0;
}
